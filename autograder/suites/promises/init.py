"""Stage 'init': every promise of reset_parameters, scale_output, expected_dot_std and
GPT2.init_weights, and the checks that hold it.

Draws are judged statistically against N(0, std^2) with bounds computed in the grader
(``test_init._misfit``); the draws themselves are the learner's by design
(docs/threat-model.md). scale_output and expected_dot_std are exact, against values computed
here.
"""

from __future__ import annotations

from autograder.suites.promises import Promise

RESET = "embeddings:Embedding.reset_parameters"
SCALE = "embeddings:Embedding.scale_output"
DOT = "embeddings:expected_dot_std"
INIT = "gpt2:GPT2.init_weights"
LAYER = "Embedding(500, 64, std) by keyword, float32 on the CPU"
SWEEP = ("d 16 and 10 on (3, 5, d) float64; (2, 3, 4, 10) float32; (7, 64) bfloat16; (12,) "
         "float32, one row; (0, 5, 16) float64, no rows; scale off on (3, 5, 16) float64 and "
         "(4, 12) float32")
MODEL = "GPT2(V=200, n_ctx=190, d=192, 2 blocks, 4 heads, untied), float32 on the CPU"
AGAIN = f"{MODEL}, then .to(torch.float64) and init_weights() again"

PROMISES: list[Promise] = [
    # Embedding.reset_parameters
    Promise(RESET, "Fill ``weight`` with independent N(0, std^2) draws, in place.",
            f"{LAYER}, std 0.02 and a random std in [0.25, 0.6]: spread, mean and shape",
            "test_init.py::test_reset_parameters_uses_std",
            "test_init.py::test_rows_start_small_and_random",
            mutant='every entry +-std, random signs'),
    Promise(RESET, "``std`` is ``self.std``; ``None`` means ``1/sqrt(d_model)``",
            "Embedding(500, 64, std=None) and Embedding(2000, 16, std=None)",
            "test_init.py::test_std_none_means_inverse_sqrt_d",
            "test_init.py::test_std_none_means_one_over_sqrt_d",
            mutant='std=None as 1/d_model'),
    Promise(RESET, "while ``0.0`` is a std like any other (every entry 0).",
            "Embedding(500, 64, std=0.0)", "test_init.py::test_std_none_means_inverse_sqrt_d",
            "test_init.py::test_std_zero_means_zeros",
            mutant='`self.std or ...` treats std=0.0 as None'),
    Promise(RESET, "Normal draws, not merely numbers of the right mean and spread: a uniform "
            "fill or a pattern such as +-std fails",
            f"{LAYER}: the Kolmogorov-Smirnov distance to N(0, std^2) within the DKW bound",
            "test_init.py::test_reset_parameters_uses_std",
            "test_init.py::test_rows_are_normal_draws",
            mutant='uniform draws with the right std'),
    Promise(RESET, "In place: the same Parameter object afterwards (an optimiser or a tied "
            "lm_head holds it)",
            "Embedding(500, 64, std=0.05).to(float64), weight all 7s, an SGD optimiser built "
            "first: its step must move the rows forward returns (certified)",
            "test_init.py::test_reset_refills_in_place",
            "test_init.py::test_reset_parameters_refills_in_place",
            mutant='reset replaces the Parameter'),
    Promise(RESET, "of the same dtype and device (the layer may have been converted with "
            "``.double()``)",
            "Embedding(500, 64, std=0.05).to(float64), weight all 7s, reset again: the rows "
            "forward returns must be float64 N(0, 0.05^2) draws (CPU only)",
            "test_init.py::test_reset_parameters_uses_std",
            "test_init.py::test_reset_parameters_refills_in_place",
            mutant='reset puts a new float32 tensor in .data'),
    Promise(RESET, "of the same dtype and device (the layer may have been converted with "
            "``.double()``)",
            "Embedding(500, 64) moved to every device of the run (the GPU, else the meta "
            "device with its values kept), reset again: its weight still there",
            "test_init.py::test_reset_refills_in_place",
            "test_init.py::test_reset_and_scale_stay_on_the_layers_device",
            mutant="reset_parameters puts a weight drawn on the CPU in place of the old one",
            edges=('devices',)),
    Promise(RESET, "and not recorded by autograd (``torch.no_grad()``), so that the weight "
            "stays a trainable leaf",
            f"{LAYER}: the weight requires grad when reset_parameters runs, so an in-place fill "
            "outside no_grad raises", "test_init.py::test_reset_parameters_uses_std",
            "test_init.py::test_reset_parameters_refills_in_place",
            mutant='normal_ outside torch.no_grad (autograd refuses the in-place fill)'),
    Promise(RESET, "Not zeros: identical rows would get identical gradients and never become "
            "different.", "Embedding(50, 64, std=0.02): 50 distinct rows",
            "test_init.py::test_rows_are_not_identical",
            "test_init.py::test_rows_start_small_and_random",
            mutant='zero init'),
    # Embedding.scale_output
    Promise(SCALE, "``x * sqrt(d_model)`` if ``scale`` else ``x``", SWEEP,
            "test_init.py::test_scale_output",
            "test_init.py::test_scale_output_multiplies_by_sqrt_d",
            mutant='scale not applied'),
    Promise(SCALE, "the gradient with respect to ``x`` is ``sqrt(d_model)`` (scale on) or 1 "
            "(off)", f"{SWEEP}: the gradient of sum(out * grad) reaching x",
            "test_init.py::test_scale_output",
            "test_init.py::test_scale_output_gradient_and_input",
            mutant='scale_output cut off from autograd (detach)'),
    Promise(SCALE, "so no ``.detach()``, ``.data`` or ``torch.no_grad()``",
            f"{SWEEP}: the output must require grad and pass the gradient back to x",
            "test_init.py::test_scale_output",
            "test_init.py::test_scale_output_gradient_and_input",
            mutant='scale_output cut off from autograd (detach)'),
    Promise(SCALE, "``x`` is left as it was (no ``x.mul_``)",
            "(3, 5, 16) float64, scale on and off: x afterwards (certified)",
            "test_init.py::test_scale_output_leaves_its_input",
            "test_init.py::test_scale_output_gradient_and_input",
            mutant='scale_output in place (x.mul_)'),
    Promise(SCALE, "``(..., d_model)`` (one row ``(d_model,)``, or none at all, such as ``(0, "
            "T, d_model)``)", SWEEP, "test_init.py::test_scale_output",
            "test_init.py::test_scale_output_keeps_dtype_and_shape",
            mutant='scale_output squeezes x (a batch of one loses its dimension)',
            edges=('empty', 'size-1')),
    Promise(SCALE, "of any float dtype (float32, float64, bfloat16)", SWEEP,
            "test_init.py::test_scale_output",
            "test_init.py::test_scale_output_keeps_dtype_and_shape",
            mutant='scale_output computed in float64 (x.double())',
            edges=('float dtypes',)),
    Promise(SCALE, "``x``'s shape, in ``x``'s dtype (no ``.double()`` or ``.float()``)",
            f"{SWEEP}: shape and dtype of the output; (3, 64) rows of a layer moved to every "
            "device of the run: the output there", "test_init.py::test_scale_output",
            "test_init.py::test_scale_output_keeps_dtype_and_shape",
            mutant="scale_output's width read as x.shape[2]", edges=('devices',)),
    Promise(SCALE, "``x``'s own values when ``scale`` is off (``x`` itself will do).",
            "scale off on (3, 5, 16) float64 and (4, 12) float32: exactly x's values, gradient "
            "1 (a copy passes too)", "test_init.py::test_scale_output",
            "test_init.py::test_scale_output_keeps_dtype_and_shape",
            mutant='scaled even when scale=False'),
    # expected_dot_std
    Promise(DOT, "``std**2 * sqrt(d_model)``",
            "(0.02, 768), (0.1, 64), (0.5, 10), (2.0, 3), (0.0, 1) by position, and a random "
            "std in [0.05, 1.05] and d in [2, 4095] by name", "test_init.py::test_expected_dot_std",
            "test_init.py::test_expected_dot_std_is_the_chapters_formula",
            mutant='dot std with d instead of sqrt(d)'),
    Promise(DOT, "With 0.02 and d = 768 that is about 0.011",
            "(0.02, 768) by position: 0.0110851 within 1e-9", "test_init.py::test_expected_dot_std",
            "test_init.py::test_expected_dot_std_is_the_chapters_formula",
            mutant='dot std with std instead of std^2'),
    Promise(DOT, "std: the rows' standard deviation (by position or by name, as ``d_model``).",
            "the random case by name (std=..., d_model=...): a TypeError names the signature",
            "test_init.py::test_expected_dot_std",
            "test_init.py::test_expected_dot_std_is_the_chapters_formula",
            mutant="expected_dot_std's parameters renamed"),
    Promise(DOT, "d_model: d, the rows' width.", "d from 1 to 4095",
            "test_init.py::test_expected_dot_std",
            "test_init.py::test_the_prediction_matches_a_measurement",
            mutant="expected_dot_std's parameters renamed"),
    Promise(DOT, "A float.", "every case above: a real number (a tensor or None is named)",
            "test_init.py::test_expected_dot_std",
            "test_init.py::test_expected_dot_std_is_the_chapters_formula",
            mutant='dot std with std instead of std^2'),
    # GPT2.init_weights
    Promise(INIT, "GPT-2's initialisation, in place, on every module.",
            f"{MODEL}: every module's weights drawn, biases and LayerNorms set; {AGAIN}",
            "test_init.py::test_gpt2_weight_stds", "test_init.py::test_gpt2_initialisation",
            mutant="init_weights with uniform draws of GPT-2's stds"),
    Promise(INIT, "Token embedding N(0, 0.02^2), position embedding N(0, 0.01^2)",
            f"{MODEL}; {AGAIN}", "test_init.py::test_gpt2_weight_stds",
            "test_init.py::test_gpt2_initialisation",
            mutant='wpe at 0.02'),
    Promise(INIT, "every Linear weight N(0, 0.02^2) (lm_head too, when untied)",
            f"{MODEL}; {AGAIN}", "test_init.py::test_gpt2_weight_stds",
            "test_init.py::test_untied_head_initialisation",
            mutant="init over the blocks only: lm_head left at nn.Linear's default"),
    Promise(INIT, "except the residual projections (``c_proj``), which get 0.02 / sqrt(2 * "
            "n_layers)", f"{MODEL}; {AGAIN}", "test_init.py::test_gpt2_weight_stds",
            "test_init.py::test_gpt2_initialisation",
            mutant='c_proj without 1/sqrt(2 n_layers)'),
    Promise(INIT, "Linear biases 0; LayerNorm scale 1 and shift 0.", MODEL,
            "test_init.py::test_gpt2_biases_and_layernorm",
            "test_init.py::test_gpt2_initialisation",
            mutant="biases left at nn.Linear's default"),
    Promise(INIT, "Normal draws (``nn.init.normal_``), not uniform ones of the same std.",
            f"{MODEL}; {AGAIN}: every weight's distance to N(0, std^2)",
            "test_init.py::test_gpt2_weight_stds", "test_init.py::test_gpt2_initialisation",
            mutant="init_weights with uniform draws of GPT-2's stds"),
    Promise(INIT, "In place, on the model's own parameters",
            f"{MODEL} as built, and {AGAIN}: the state_dict's names and dtypes kept",
            "test_init.py::test_gpt2_weight_stds",
            "test_init.py::test_init_weights_keeps_the_dtype",
            mutant='init_weights puts new float32 tensors in .data'),
    Promise(INIT, "it may run again after ``.to(dtype)`` or ``.double()``, and each parameter "
            "keeps its dtype and device", f"{AGAIN}: every parameter float64 (CPU only)",
            "test_init.py::test_gpt2_weight_stds",
            "test_init.py::test_init_weights_keeps_the_dtype",
            mutant='init_weights puts new float32 tensors in .data'),
    Promise(INIT, "each parameter keeps its dtype and device (``.data = torch.randn(...)`` "
            "would not)",
            f"{MODEL} moved to every device of the run (the GPU, else the meta device with its "
            "values kept), init_weights() again: every tensor of its state_dict still there",
            "test_init.py::test_gpt2_weight_stds",
            "test_init.py::test_init_weights_keeps_the_models_device",
            mutant="init_weights puts weights drawn on the CPU in .data",
            edges=('devices',)),
    Promise(INIT, "or on a model whose numbers have changed (trained), so it sets every "
            "parameter anew, the LayerNorms' 1 and 0 too (not left to their constructor)",
            f"{MODEL}, every parameter set to 3, then init_weights() again: biases 0, "
            "LayerNorms 1 and 0, every weight's draw",
            "test_init.py::test_gpt2_biases_and_layernorm",
            "test_init.py::test_init_weights_sets_every_parameter_again",
            mutant="init_weights leaves the LayerNorms to their constructor"),
]
