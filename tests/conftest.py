"""The two tiers of this repository's tests, decided here and nowhere else.

``make test`` runs the fast tier (``pytest -m "not slow"``) on every change; ``make test-all``
runs the full tier (``pytest -m slow``): the rest, before a merge or a release. Together they
run every test exactly once. A test is in the full tier when the tables below put it there;
every other test, a new one included, is fast. tests/test_tiers.py keeps the fast tier honest:
every stage, front end and class of attack keeps tests in it, and no test file marks itself.

The fast tier keeps one representative of each kind, the full tier every other case: a test
slower than 20 s in the fast tier is a finding (docs/quality-gate.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lumen.stages import STAGE_NAMES

#: The tier marker (pyproject.toml registers it). Only this file adds it.
FULL_TIER = "slow"

#: Whole files, and single tests (every case), that only the full tier runs, and why.
FULL: dict[str, str] = {
    "test_batch_class.py": "the class of 100 (every variant and hostile learner in one batch); "
                           "test_batch.py keeps the batch front end fast",
    "test_release.py::test_pip_install_editable_leaves_nothing_untracked":
        "a fresh virtual environment and two pip runs",
    "test_release.py::test_make_release_refuses_edits_saying_how_to_keep_or_drop_them":
        "the release's own command in a scratch copy: nbgrader renders the lab notebook to "
        "tell edits apart (~10 s of CPU, 30 s beside other workers); the same words are "
        "checked fast in test_handout.py::test_edited_exercises_are_named_as_edits_with_both_"
        "ways_out, through release.write",
    "test_release.py::test_each_stage_needs_only_the_stages_before_it":
        "five handouts, each a fresh pytest of the visible tests (~25 s in all); the "
        "self-check's runs on lumen and on the stubs stay fast",
    "test_rubric_flow.py": "two releases, gradebooks and workflows per case; the release and "
                           "the rubric are tested fast in test_release.py and test_nbgrader.py",
    **dict.fromkeys(
        ("test_nbgrader.py::test_zip_collects_layout_is_graded",
         "test_nbgrader.py::test_a_late_submission_gets_nbgraders_penalty",
         "test_nbgrader.py::test_a_rerun_grades_only_new_or_changed_submissions"),
        "a second nbgrader course, built once for these three (zip_collect's layout, late "
        "penalties, a rerun); nbgrader's pipeline stays fast in "
        "test_nbgraders_gradebook_agrees_with_the_grader"),
    "test_nbgrader.py::test_make_nbgrade_grades_a_class_of_two":
        "a third nbgrader course (~25 s), for the command make nbgrade runs, end to end; the "
        "fast tier runs python -m autograder nbgrade itself (test_nbgrader.py's class) and "
        "checks the Makefile's recipe with make -n",
    "test_same_notes.py": "one submission graded by five front ends (two minutes); the notes "
                          "are made in one place, grading.submission_notes, which "
                          "test_batch.py's fast test of a submission's name exercises",
    **dict.fromkeys(
        (f"test_escaping.py::{name}" for name in (
            "test_nbgrader_feedback_holds_no_live_html",
            "test_nbgrader_honest_feedback_still_shows_the_scores",
            "test_nbgrader_stages_csv_has_no_formula",
            "test_nbgrader_stores_written_answers_inert",
            "test_formgrader_view_holds_no_live_html",
            "test_formgrader_view_runs_nothing_in_a_browser")),
        "a second nbgrader course, for its hostile notebooks (~15 s of CPU: 28 s with the "
        "other worker busy); nbgrader's pipeline stays fast in test_nbgrader.py (its hostile "
        "learner's cells run nothing), and escaping in this file's other front ends"),
    "test_slurm.py": "a one-node Slurm (munged, slurmctld, slurmd) grading a class of three "
                     "as deploy/'s job array and merge, beside one grade-batch (~1 min); "
                     "tests/test_deploy.py runs the recipe's commands fast with a stand-in "
                     "sbatch",
    **dict.fromkeys(
        ("test_commands.py::test_slow_documented_command_runs_as_written",
         "test_commands.py::test_jupyter_lab_opens_the_lab_notebook",
         "test_commands.py::test_the_handouts_setup_installs_into_a_fresh_venv"),
        "documented commands too slow for the fast tier (a benchmark, nbgrader's course, a "
        "server, a fresh venv with torch): the fast tier runs their --help or make -n"),
    "test_lumen_cli.py::test_figures_and_the_explorer_agree_on_the_pca_panel":
        "four fresh processes on GloVe (~15 s of CPU, twice that on a busy machine); the "
        "panel's one source is tested fast in test_figures.py, its stages in "
        "test_partial_work.py",
    "test_import_deadline.py::test_an_import_that_never_finishes_still_runs_out_of_time":
        "every check of two stages runs into the import limit; an endless loop is stopped "
        "fast in test_grader_attacks.py",
}


#: A Sample's ``param`` that stands for the case id's text before ": " (the stage, in
#: "embedding: a natural range check"), for cases whose parameter is a dict of code.
ID_PREFIX = "<the id's prefix>"


@dataclass(frozen=True)
class Sample:
    """A parametrised test (or file) whose fast tier keeps a few cases, the full tier the rest.

    ``param``: the parameter (or parametrised fixture, or ID_PREFIX) that picks them; None
    keeps only the first case. ``keep``: None keeps the first case of each of its values (one
    per stage, say); a value keeps every case with that value (the bubblewrap sandbox, say)."""

    param: str | None
    keep: object = None
    why: str = ""


#: "file" or "file::test" -> which of its cases stay fast.
SAMPLED: dict[str, Sample] = {
    "test_grader_variants.py::test_correct_alternative_gets_full_marks": Sample(
        "stage", why="one correct alternative per stage, under every seed"),
    "test_grader_variants.py::test_mistake_is_named": Sample(
        "stage", why="one known mistake per stage, under every seed"),
    "test_scaffolds.py::test_correct_variant_gets_full_marks_on_every_stage": Sample(
        ID_PREFIX, why="one correct alternative per stage, graded whole next to the scaffolds"),
    "test_scaffolds.py::test_scaffold_loses_points_on_its_own_stage": Sample(
        "stage", why="one scaffold per stage"),
    "test_visible_tests.py": Sample(
        "checked", keep="params", why="one stage's visible tests against every variant of "
        "it; each stage's run is a fresh pytest over 20-40 packages (~20 s)"),
    "test_commands.py::test_documented_command_runs_as_written": Sample(
        "head", why="one line of each command the documents show (make grade, python -m "
        "lumen neighbours, ...); the other lines of the same command in the full tier"),
    "test_meta_pass.py::test_the_meta_pass_changes_no_verdict_of_correct_code": Sample(
        "stage", why="one correct variant per stage with device checks, graded with the meta "
        "pass and without"),
    "test_wire.py::test_schema_valid_strange_replies_are_judged_not_raised": Sample(
        None, why="one seed's strange replies to every probe; the other seeds draw other "
        "values of the same schemas"),
    "test_wire.py::test_a_state_dict_of_markers_is_the_learners": Sample(
        None, why="one marker state_dict through the tying probes; the others are the same "
        "check on other markers"),
    "test_grader_attacks.py": Sample(
        "grader", keep="bwrap", why="every attack under bubblewrap, the default; the same "
        "attacks under --sandbox unsafe-process in the full tier (test_fail_closed.py "
        "tries both modes fast)"),
}


def _where(item: pytest.Item) -> tuple[str, str]:
    """("test_x.py", "test_x.py::test_name"): the keys of the tables above."""
    file = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    return file, f"{file}::{getattr(item, 'originalname', item.name)}"


def _full(item: pytest.Item, seen: set) -> bool:
    """Whether ``item`` belongs to the full tier (``seen``: the sampled cases kept so far)."""
    file, test = _where(item)
    if file in FULL or test in FULL:
        return True
    key = test if test in SAMPLED else file if file in SAMPLED else None
    if key is None:
        return False
    sample, callspec = SAMPLED[key], getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    if callspec is None or sample.param not in (None, ID_PREFIX, *params):
        return False  # a test of a sampled file without that parameter: not sampled
    if sample.keep is not None:
        return params[sample.param] != sample.keep
    if sample.param == ID_PREFIX:
        value = callspec.id.split(": ", 1)[0]
    else:
        value = repr(params[sample.param]) if sample.param is not None else None
    if (key, value) in seen:
        return True
    seen.add((key, value))
    return False


def _stage_of(item: pytest.Item) -> str | None:
    """The stage a test is parametrised with (``stage``: a variant, a scaffold, ...), if any."""
    callspec = getattr(item, "callspec", None)
    stage = callspec.params.get("stage") if callspec is not None else None
    return stage if isinstance(stage, str) and stage in STAGE_NAMES else None


#: What collection saw, for tests/test_tiers.py: whether the whole of tests/ was collected, and
#: (node id, full tier?, marker names) for every test, before -m or -k deselected any.
COLLECTED = pytest.StashKey[tuple[bool, list[tuple[str, bool, frozenset[str]]]]]()
#: Node ids of tests that carried the tier marker before this file added it (their own files
#: marked them: test_tiers.py asks for the table above instead).
SELF_MARKED = pytest.StashKey[list[str]]()


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the marker added here
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    seen: set = set()
    listing, self_marked = [], []
    for item in items:
        if item.get_closest_marker(FULL_TIER) is not None:
            self_marked.append(item.nodeid)
        elif _full(item, seen):
            item.add_marker(FULL_TIER)
        stage = _stage_of(item)
        if stage is not None and item.get_closest_marker(stage) is None:
            item.add_marker(stage)  # pytest tests -m <stage> runs that stage's variants too
        names = frozenset(m.name for m in item.iter_markers())
        listing.append((item.nodeid, FULL_TIER in names, names))
    tests = config.rootpath / "tests"
    whole = all(config.rootpath.joinpath(arg).resolve() == tests for arg in config.args)
    config.stash[COLLECTED] = (whole, listing)
    config.stash[SELF_MARKED] = self_marked
