"""``make gpu-check`` is ready to run on a GPU machine: every variant it grades exists, and
without a GPU it says so and exits 2 instead of failing halfway."""

from __future__ import annotations

import pytest

from tools import gpu_check


@pytest.mark.parametrize("entry", [*gpu_check.PARITY, gpu_check.DEVICE_MISTAKE])
def test_the_variants_it_grades_exist(entry):
    name, replacements = gpu_check._variant(*entry)
    assert name and replacements


def test_without_a_gpu_it_says_so(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: make gpu-check runs the real thing")
    assert gpu_check.main([]) == 2
    assert "no CUDA device here" in capsys.readouterr().out
