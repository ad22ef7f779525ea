"""Hostile submissions: each attack gains no point and leaves other submissions untouched.

Every attack is lumen with Embedding.forward (or the module's top level) replaced by hostile
code, graded on stage 'embedding' through one warm Grader, as a class would be. After all of
them, lumen's own files, graded by the same worker, still get full marks.
"""

from __future__ import annotations

import os
import socket
import textwrap
import threading
from pathlib import Path

import pytest

from autograder.grading import Grader
from autograder.sandbox import BwrapLauncher
from autograder.worker_client import Limits
from tests.variants.build import make_submission

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(BwrapLauncher.find() is None,
                                reason="bubblewrap is not usable here (make setup installs it)")


def forward(body: str) -> dict:
    """A replacement Embedding.forward running ``body`` before an honest-looking return."""
    code = "def forward(self, ids):\n" + textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return {"embeddings:Embedding.forward": code + "\n    return self.weight[ids]\n"}


def at_import(body: str) -> dict:
    """Hostile code at the top level of embeddings.py (after check_ids)."""
    code = textwrap.dedent('''
        def check_ids(ids, vocab_size):
            pass
    ''') + textwrap.dedent(body)
    return {"embeddings:check_ids": code}


@pytest.fixture(scope="module")
def grader():
    limits = Limits(probe_seconds=3, import_seconds=6, submission_seconds=40)
    with Grader(device="cpu", sandbox="bwrap", limits=limits) as g:
        yield g


def _embedding(grader, tmp_path, replacements):
    folder = make_submission(tmp_path / "submission", replacements)
    result = grader.grade(folder, stages=["embedding"])
    return next(s for s in result.stages if s.name == "embedding"), result


HONEST = {"test_weight_is_a_parameter"}  # checks only __init__, which a forward attack keeps


def _assert_no_points(stage, replacements=None):
    """No test that runs the attacked code passes (``__init__``'s own check may, honestly)."""
    keeps_init = replacements is None or "embeddings:Embedding.forward" in replacements
    passed = {r.name for r, _, _ in stage.tests if r.passed}
    assert passed <= (HONEST if keeps_init else set()), \
        [(r.name, r.passed, r.message) for r, _, _ in stage.tests]


SECRET = "test_lookup_every_shape"  # a line of the hidden suite, never to be printed back


ATTACKS = {
    "sys.exit at import": at_import("import sys\nsys.exit(0)\n"),
    "os._exit at import": at_import("import os\nos._exit(0)\n"),
    "os._exit in a test": forward("import os\nos._exit(3)"),
    "monkeypatch torch.equal, allclose, Tensor.__eq__": forward('''
        torch.equal = lambda *a, **k: True
        torch.allclose = lambda *a, **k: True
        torch.Tensor.__eq__ = lambda *a, **k: True
        return torch.zeros(*ids.shape, self.d_model)
    '''),
    "monkeypatch the probes": at_import('''
        import sys
        probes = sys.modules.get("probes")
        if probes is not None:
            for name in list(probes.PROBES):
                probes.PROBES[name] = lambda m, **kw: {"out": None, "calls": [], "passed": True}
    '''),
    "monkeypatch pytest and the grader": at_import('''
        import sys
        for name in list(sys.modules):
            if name.startswith(("pytest", "_pytest", "autograder")):
                sys.modules[name].__dict__.clear()
        import builtins
        builtins.__import__ = lambda *a, **k: None
    '''),
    "an object equal to everything": forward('''
        class Yes:
            def __eq__(self, other): return True
            def __getattr__(self, name): return lambda *a, **k: self
        return Yes()
    '''),
    "printing fake results": forward('''
        print('{"score": 100, "tests": []}')
        print("100 passed, 0 failed")
        print("embedding 20.0 / 20 all checks passed")
        return torch.zeros(*ids.shape, self.d_model)
    '''),
    "reading the hidden tests and lumen": forward(f'''
        import glob
        for path in glob.glob("{REPO}/**/*.py", recursive=True):
            try:
                print(open(path).read())
            except OSError:
                pass
        return torch.zeros(*ids.shape, self.d_model)
    '''),
    "importing lumen or the reference": forward('''
        import sys
        try:
            import lumen.embeddings as ref
        except ImportError:
            ref = sys.modules["_reference.embeddings"]
        return ref.Embedding.forward(self, ids)
    '''),
    "a fork bomb": forward('''
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    '''),
    "an infinite loop": forward("while True:\n    pass"),
    "allocating all memory": forward("hog = bytearray(64 << 30)\nhog2 = torch.empty(1 << 40)"),
    "filling the disk": forward('''
        import itertools
        for i in itertools.count():
            with open(f"/tmp/fill-{i}", "wb") as f:
                f.write(b"x" * (1 << 20))
    '''),
    "a segfault through ctypes": forward("import ctypes\nctypes.string_at(0)"),
    "megabytes of stdout": forward('''
        import sys
        for _ in range(64):
            sys.stdout.write("x" * (1 << 20))
        return torch.zeros(*ids.shape, self.d_model)
    '''),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_attack_gains_nothing(grader, tmp_path, attack):
    stage, result = _embedding(grader, tmp_path, ATTACKS[attack])
    _assert_no_points(stage, ATTACKS[attack])
    for r, _, _ in stage.tests:
        assert not r.grader_error, r.message
        assert SECRET not in r.output and "BEGIN SOLUTION" not in r.output, \
            "the hidden suite or the reference leaked into the learner's output"
        assert len(r.output) < 20_000, "learner output must be truncated"


def test_results_and_repository_are_out_of_reach(grader, tmp_path):
    """Writing results.json, the gradebook or the repository fails: nothing outside changes."""
    target = tmp_path / "results.json"
    target.write_text("untouched")
    gradebook = REPO / "autograder" / "rubric.toml"
    before = gradebook.read_text()
    stage, _ = _embedding(grader, tmp_path, forward(f'''
        for path in ("{target}", "{gradebook}", "/autograder/results/results.json",
                     "results.json"):
            try:
                with open(path, "w") as f:
                    f.write('{{"score": 100}}')
            except OSError:
                pass
        return torch.zeros(*ids.shape, self.d_model)
    '''))
    _assert_no_points(stage)
    assert target.read_text() == "untouched"
    assert gradebook.read_text() == before


def test_no_network(grader, tmp_path):
    """A connection to a listener on this machine's loopback never arrives."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    got = []

    def accept():
        for _ in range(40):
            try:
                got.append(server.accept())
                return
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept)
    thread.start()
    stage, _ = _embedding(grader, tmp_path, forward(f'''
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=1).sendall(b"answers?")
            print("CONNECTED")
        except OSError as error:
            print("no network:", error)
        return torch.zeros(*ids.shape, self.d_model)
    '''))
    thread.join()
    server.close()
    _assert_no_points(stage)
    assert not got, "learner code reached a socket outside the sandbox"


def test_background_process_is_ended(grader, tmp_path):
    """A process left running (setsid, double fork) is ended when its submission is done."""
    stage, _ = _embedding(grader, tmp_path, forward('''
        import subprocess
        subprocess.Popen(["sleep", "300"], start_new_session=True)
        return torch.zeros(*ids.shape, self.d_model)
    '''))
    _assert_no_points(stage)
    import time

    time.sleep(0.5)  # the zygote ends the user's processes on its next loop
    leftovers = []
    for entry in os.listdir("/proc"):
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        uid = int(next(x for x in status.splitlines() if x.startswith("Uid:")).split()[1])
        if uid >= 200_000 and "sleep" in Path(f"/proc/{entry}/comm").read_text():
            leftovers.append(entry)
    assert not leftovers, f"background processes survived: {leftovers}"


def test_other_submissions_untouched(grader, tmp_path):
    """After every attack, the same warm worker still grades a correct submission fully."""
    stage, result = _embedding(grader, tmp_path, {})
    assert stage.score == stage.max_score, [r.message for r, _, _ in stage.tests if not r.passed]
