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

from autograder.boundary.launcher import BwrapLauncher
from autograder.grading import Grader
from autograder.options import Limits, Options
from tests.variants.build import make_submission

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(BwrapLauncher.find() is None,
                                reason="bubblewrap is not usable here (make setup installs it)")


def forward(body: str) -> dict:
    """A replacement Embedding.forward running ``body`` before an honest-looking return."""
    code = "def forward(self, ids):\n" + textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return {"embeddings:Embedding.forward": code + "\n    return self.weight[ids]\n"}


WRONG_FORWARD = "def forward(self, ids):\n    return torch.zeros(*ids.shape, self.d_model)\n"


def at_import(body: str) -> dict:
    """Hostile code at the top level of embeddings.py (after check_ids), with a wrong forward:
    every point it gets would be stolen."""
    code = textwrap.dedent('''
        def check_ids(ids, vocab_size):
            pass
    ''') + textwrap.dedent(body)
    return {"embeddings:check_ids": code, "embeddings:Embedding.forward": WRONG_FORWARD}


#: Every attack runs in both sandboxes: bubblewrap, and --sandbox unsafe-process as root,
#: where each stage process has its namespaces, user and private root without bwrap.
SANDBOXES = ["bwrap", pytest.param("unsafe-process", marks=pytest.mark.skipif(
    os.geteuid() != 0, reason="without root the unsafe mode isolates nothing (it says so)"))]


@pytest.fixture(scope="module", params=SANDBOXES)
def grader(request):
    limits = Limits(probe_seconds=3, import_seconds=6, submission_seconds=40)
    with Grader(Options(device="cpu", sandbox=request.param, limits=limits)) as g:
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


def test_a_timeout_says_its_limit(grader, tmp_path):
    """A check that runs out of time says which limit stopped it and how long it is."""
    stage, _ = _embedding(grader, tmp_path, ATTACKS["an infinite loop"])
    messages = [r.message for r, _, _ in stage.tests if not r.passed]
    assert any("did not finish in time (stopped at each check's limit, 3 s)" in m
               for m in messages), messages


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_attack_gains_nothing(grader, tmp_path, attack):
    stage, result = _embedding(grader, tmp_path, ATTACKS[attack])
    _assert_no_points(stage, ATTACKS[attack])
    for r, _, _ in stage.tests:
        assert not r.grader_error, r.message
        assert SECRET not in r.output and "BEGIN SOLUTION" not in r.output, \
            "the hidden suite or the reference leaked into the learner's output"
        assert len(r.output) < 20_000, "learner output must be truncated"


#: An encoding declaration, and how that codec spells a newline in text that reads as ASCII.
SMUGGLERS = {"utf-7": "+AAo-", "unicode_escape": "\\n", "raw_unicode_escape": "\\u000a"}


@pytest.mark.parametrize("codec", list(SMUGGLERS))
def test_a_declared_encoding_runs_only_what_the_rules_read(grader, tmp_path, codec):
    """embeddings.py declares a codec in which its comment holds a newline: Python's own
    import would run the line hidden there, ``return torch.nn.functional.embedding(...)``
    (the lookup right, and no embedding for the rules to see). The grader runs the text its
    rules read: the hidden line is a comment, and forward returns zeros."""
    folder = make_submission(tmp_path / "submission", forward("# SMUGGLED"))
    path = folder / "embeddings.py"
    text = path.read_text(encoding="utf-8")
    if codec == "utf-7":
        text = text.replace("+", "+-")  # "+" itself is "+-" in UTF-7
    hidden = (f"# it is only a comment{SMUGGLERS[codec]}"
              "        return torch.nn.functional.embedding(ids, self.weight)")
    text = text.replace("# SMUGGLED", hidden).replace(
        "return self.weight[ids]", "return torch.zeros(*ids.shape, self.d_model)")
    path.write_text(f"# -*- coding: {codec} -*-\n" + text, encoding="utf-8")
    stage = next(s for s in grader.grade(folder, stages=["embedding"]).stages
                 if s.name == "embedding")
    _assert_no_points(stage, {"embeddings:Embedding.forward": ""})
    assert not any(r.grader_error for r, _, _ in stage.tests)


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
        if uid in grader.uid_range and "sleep" in Path(f"/proc/{entry}/comm").read_text():
            leftovers.append(entry)
    assert not leftovers, f"background processes survived: {leftovers}"


def test_other_submissions_untouched(grader, tmp_path):
    """After every attack, the same warm worker still grades a correct submission fully."""
    stage, result = _embedding(grader, tmp_path, {})
    assert stage.score == stage.max_score, [r.message for r, _, _ in stage.tests if not r.passed]


# --- issue 7.1: the stage processes of one submission cannot talk to one another -----------

#: Code every stage process of one submission runs at import: it publishes itself on every
#: channel it can think of (files in each writable place, an abstract and a path socket, a
#: loopback port, a SysV shared-memory key, signals to every process it can see), and
#: ``_heard()`` lists what it receives from a sibling. Used inside the sandbox and, as the
#: control that shows the detection works, in two plain processes on the host.
POOL = '''
import ctypes, os, signal, socket, time
_TOKEN = f"{os.getpid()}-{time.monotonic_ns()}"
_WAITED = []
_PLACES = [p for p in ("/tmp", "/dev/shm", "/var/tmp", "/run/lock") if os.path.isdir(p)]
_servers = []
for _place in _PLACES:
    try:
        with open(os.path.join(_place, f"lumen-pool-{_TOKEN}"), "w") as _f:
            _f.write(_TOKEN)
    except OSError:
        pass
_CHANNELS = ((socket.AF_UNIX, "\\0lumen-pool"), (socket.AF_INET, ("127.0.0.1", 47613)))
for _family, _address in _CHANNELS:
    try:
        _s = socket.socket(_family, socket.SOCK_STREAM)
        _s.bind(_address)
        _s.listen(8)
        _s.setblocking(False)
        _servers.append(_s)
    except OSError:
        pass
try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _SHM_ID = _libc.shmget(0x4C554D, 4096, 0o1000 | 0o2000 | 0o666)  # IPC_CREAT|EXCL
    _SHM_CREATED = _SHM_ID >= 0
except OSError:
    _SHM_CREATED = False


def _cleanup():
    """Remove what this process published on the host (the control runs outside a sandbox)."""
    for place in _PLACES:
        try:
            os.remove(os.path.join(place, f"lumen-pool-{_TOKEN}"))
        except OSError:
            pass
    if _SHM_CREATED:
        _libc.shmctl(_SHM_ID, 0, None)  # IPC_RMID


def _heard():
    heard = []
    for place in _PLACES:
        try:
            heard += [f"{place}/{n}" for n in os.listdir(place)
                      if n.startswith("lumen-pool-") and not n.endswith(_TOKEN)]
        except OSError:
            pass
    for family, address in _CHANNELS:
        if any(s.family == family for s in _servers):
            for s in _servers:
                try:
                    if s.family == family and s.accept():
                        heard.append(f"a sibling connected to {address!r}")
                except OSError:
                    pass
            continue
        try:
            socket.create_connection(address, timeout=0.2) if family == socket.AF_INET else \\
                socket.socket(family).connect(address)
            heard.append(f"connected to a sibling's {address!r}")
        except OSError:
            pass
    if not _SHM_CREATED and _libc.shmget(0x4C554D, 4096, 0o666) >= 0:
        heard.append("a sibling's SysV shared memory")
    others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    reachable = []
    for pid in others:
        try:
            os.kill(pid, 0)
            reachable.append(pid)
        except OSError:
            pass
    if reachable:
        heard.append(f"could signal {len(reachable)} other processes")
    return heard
'''


def test_pool_detection_works_between_plain_processes(tmp_path):
    """The control: two ordinary processes on this machine do hear each other."""
    import subprocess
    import sys

    script = tmp_path / "pool.py"
    script.write_text(POOL + "\ntime.sleep(1.0)\nprint(_heard())\ntime.sleep(0.5)\n_cleanup()\n")
    runs = [subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
            for _ in range(2)]
    outputs = [p.communicate(timeout=30)[0] for p in runs]
    assert any("lumen-pool" in out for out in outputs), outputs


POOLING = {  # every stage process publishes itself; the embedding stage's forward reports
    "embeddings:check_ids": "def check_ids(ids, vocab_size):\n    pass\n" + POOL,
    "embeddings:Embedding.forward": '''
        def forward(self, ids):
            if not _WAITED:  # the first call waits until the siblings have loaded
                time.sleep(0.3)
                _WAITED.append(True)
            raise RuntimeError(f"heard: {_heard()}")
    ''',
}


def test_stage_processes_cannot_pool(grader, tmp_path):
    """Every stage process publishes itself at import; none hears a sibling, on any channel.

    Graded on every stage, so a process per stage of one submission run side by side; the
    embedding stage's forward waits until its siblings have loaded, then reports."""
    folder = make_submission(tmp_path / "submission", POOLING)
    result = grader.grade(folder)
    stage = next(s for s in result.stages if s.name == "embedding")
    messages = [r.message for r, _, _ in stage.tests if "heard:" in r.message]
    assert messages, [r.message for r, _, _ in stage.tests]
    for message in messages:
        assert "heard: []" in message, message


# --- issue 7.2: one learner cannot touch the next learner's grade ---------------------------

HOSTILE = {
    "fills /tmp and /dev/shm, leaves files behind": forward('''
        import os
        for place in ("/tmp", "/dev/shm"):
            for i in range(100):
                try:
                    with open(os.path.join(place, f"fill-{i}"), "wb") as f:
                        f.write(b"x" * (1 << 20))
                except OSError:
                    break
        for name in ("torch.py", "embeddings.py", "lumen.py"):
            try:
                with open(os.path.join("/tmp", name), "w") as f:
                    f.write("raise SystemExit('planted by another learner')\\n")
            except OSError:
                pass
        return torch.zeros(*ids.shape, self.d_model)
    '''),
    "a process that keeps re-forking, then attacks": forward('''
        import os, signal, time
        if os.fork() == 0:
            os.setsid()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if os.fork():
                    os._exit(0)  # the parent goes: a single pass over /proc never sees it still
                try:
                    os.kill(-1, signal.SIGKILL)  # and every process it may signal
                except OSError:
                    pass
                time.sleep(0.01)
            os._exit(0)
        return torch.zeros(*ids.shape, self.d_model)
    '''),
    "floods its output": forward('''
        import sys
        for _ in range(80):
            sys.stdout.write("x" * (1 << 20))
        return torch.zeros(*ids.shape, self.d_model)
    '''),
}

VICTIMS = {
    "lumen": {},
    "a partial solution": {"embeddings:check_ids": "def check_ids(ids, vocab_size):\n    pass\n"},
}


def _per_stage(result) -> dict:
    return {s.name: [(r.name, r.passed) for r, _, _ in s.tests] for s in result.stages}


def test_hostile_learners_do_not_touch_later_victims(grader, tmp_path):
    """Hostile learners graded before each victim on the same warm worker change nothing:
    every victim's per-stage verdicts equal its solo grade on a fresh worker."""
    solo = {}
    with Grader(Options(device="cpu", sandbox="bwrap")) as fresh:
        for name, replacements in VICTIMS.items():
            folder = make_submission(tmp_path / f"solo-{len(solo)}", replacements)
            solo[name] = _per_stage(fresh.grade(folder, seed=7))
    for n, (attack, replacements) in enumerate(HOSTILE.items()):
        stage, _ = _embedding(grader, tmp_path / f"hostile-{n}", replacements)
        _assert_no_points(stage, replacements)
        for name, victim in VICTIMS.items():
            folder = make_submission(tmp_path / f"victim-{n}-{name}", victim)
            got = _per_stage(grader.grade(folder, seed=7))
            assert got == solo[name], f"after {attack!r}, {name} was graded differently"


def test_no_process_of_a_learner_survives(grader, tmp_path):
    """After the re-forking learner, no process of any learner's user is left on the machine."""
    _embedding(grader, tmp_path, HOSTILE["a process that keeps re-forking, then attacks"])
    leftovers = []
    for entry in os.listdir("/proc"):
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        uid = int(next(x for x in status.splitlines() if x.startswith("Uid:")).split()[1])
        if uid in grader.uid_range:  # this grader's learners (others may be grading too)
            leftovers.append(entry)
    assert not leftovers, f"processes of learners survived: {leftovers}"


# --- issue 7.3: limits the learner cannot lift ---------------------------------------------

LIFTING = forward('''
        import os, resource
        found = []
        for kind in ("RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_DATA"):
            limit = getattr(resource, kind)
            soft, hard = resource.getrlimit(limit)
            if hard == resource.RLIM_INFINITY:
                continue  # not a limit here (RLIMIT_DATA is the GPU runner's)
            try:
                resource.setrlimit(limit, (hard, hard))
                resource.setrlimit(limit, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                found.append(f"raised {kind}")
            except (ValueError, OSError):
                pass
        try:
            hog = bytearray(3 << 30)
            found.append("allocated 3 GiB")
        except MemoryError:
            pass
        started = 0
        for _ in range(300):
            try:
                if os.fork() == 0:
                    import time
                    time.sleep(5)
                    os._exit(0)
                started += 1
            except OSError:
                break
        if started >= 300:
            found.append("started 300 processes")
        raise RuntimeError(f"lifted: {found}")
    ''')


def test_limits_cannot_be_raised(grader, tmp_path):
    """Raising a limit back to its hard value fails, and the limits then hold: 3 GiB past the
    memory cap cannot be allocated and 300 processes cannot be started."""
    stage, _ = _embedding(grader, tmp_path, LIFTING)
    messages = [r.message for r, _, _ in stage.tests if "lifted:" in r.message]
    assert messages and all("lifted: []" in m for m in messages), messages


def test_memory_of_the_whole_sandbox_is_bounded(tmp_path):
    """Where a memory cgroup can be made, the sandbox's processes together cannot use more than
    its bound, even when each stays under its own address-space limit (a GPU runner has only
    this bound). Four processes touching 400 MiB each do not all survive a 1 GiB sandbox."""
    from autograder.boundary.launcher import memory_cgroup

    folder, _ = memory_cgroup(1 << 30)
    if folder is None:
        pytest.skip("no memory cgroup can be made on this machine")
    folder.rmdir()
    limits = Limits(probe_seconds=20, import_seconds=10, submission_seconds=60,
                    sandbox_memory_bytes=1 << 30)
    with Grader(Options(device="cpu", sandbox="bwrap", limits=limits)) as small:
        assert "cgroup" in small.launcher.memory
        stage, _ = _embedding(small, tmp_path, {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                import os
                children = []
                for _ in range(4):
                    pid = os.fork()
                    if pid == 0:
                        block = bytearray(400 << 20)
                        for i in range(0, len(block), 4096):
                            block[i] = 1
                        os._exit(0)
                    children.append(pid)
                killed = sum(os.WIFSIGNALED(os.waitpid(pid, 0)[1]) for pid in children)
                raise RuntimeError(f"killed: {killed}")
        '''})
        first = next(r.message for r, _, _ in stage.tests if r.name == "test_lookup_every_shape")
        # either some of the four were killed, or the stage process itself went with them
        assert ("killed:" in first and "killed: 0" not in first) or "ended" in first, first
        victim = make_submission(tmp_path / "victim", {})
        after = next(s for s in small.grade(victim, stages=["embedding"]).stages
                     if s.name == "embedding")
        assert after.score == after.max_score
