"""Everything CUDA, in one run of a few minutes on a GPU machine: ``make gpu-check``.

    python -m tools.gpu_check [--out DIR]

1. the repository's CUDA tests (``pytest -m cuda``: lumen on the GPU against the CPU);
2. lumen graded with ``--device cuda`` (every tensor check on the CPU and on CUDA): 100;
3. CPU/CUDA parity: a handful of correct variants and known mistakes graded by a CPU-only
   grader and by a CUDA grader get the same per-stage scores (a hard-coded device is the one
   mistake allowed to differ, and it must lose points on CUDA);
4. the memory bound on a GPU runner, where address-space limits cannot be used: the report
   says what bounds memory, and a submission that allocates far past its bound is stopped
   and costs only its own points.

Prints one line per check and exits 1 if any failed. CI has no GPU: this is for a GPU runner
(``.github/workflows/grade.yml``'s gpu job) or a machine lent for the check.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (stage, kind, name) of the variants graded on both devices.
PARITY = [
    ("embedding", "CORRECT", "plain indexing"),
    ("embedding", "MISTAKES", "negative ids wrap"),
    ("onehot", "CORRECT", "comparison with arange, einsum"),
    ("neighbours", "CORRECT", None),
    ("tying", "MISTAKES", None),
    ("init", "CORRECT", None),
]
DEVICE_MISTAKE = ("embedding", "MISTAKES", "hard-coded cpu")
HOG = {"embeddings:Embedding.forward": '''
    def forward(self, ids):
        hog = bytearray(64 << 30)  # 64 GiB of host memory, touched
        for i in range(0, len(hog), 1 << 20):
            hog[i] = 1
        return self.scale_output(self.weight[ids.long()])
'''}


def _variant(stage: str, kind: str, name: str | None) -> tuple[str, dict]:
    import importlib

    table = getattr(importlib.import_module(f"tests.variants.{stage}"), kind)
    name = name if name is not None else next(iter(table))
    value = table[name]
    return name, value if kind == "CORRECT" else value[0]


def _scores(result) -> dict[str, float]:
    return {s.name: s.score for s in result.stages}


def check(name: str, ok: bool, detail: str = "") -> bool:
    print(f"{'ok  ' if ok else 'FAIL'}  {name}{': ' + detail if detail else ''}", flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.gpu_check")
    parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device here (or a CPU build of torch): run this on a GPU runner, with "
              "make gpu-check TORCH='torch==2.13.0 --index-url <a CUDA wheel index>'")
        return 2
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"{torch.cuda.get_device_name(0)}", flush=True)
    results = []
    started = time.perf_counter()
    tests = subprocess.run([sys.executable, "-m", "pytest", "tests", "-m", "cuda", "-q",
                            "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True)
    last = (tests.stdout.strip().splitlines() or ["no output"])[-1]
    results.append(check("pytest -m cuda", tests.returncode == 0, last))

    from autograder.grading import Grader
    from autograder.options import Limits, Options
    from tests.variants.build import make_submission

    with tempfile.TemporaryDirectory() as tmp, Grader(Options(device="cuda")) as gpu, \
            Grader(Options(device="cpu")) as cpu:
        lumen = gpu.grade(ROOT / "lumen", seed=1)
        results.append(check("lumen graded on cpu and cuda", lumen.score == 100
                             and gpu.devices == ["cpu", "cuda"],
                             f"{lumen.score:g}/100 on {', '.join(lumen.devices)}"))
        for n, (stage, kind, wanted) in enumerate(PARITY):
            name, replacements = _variant(stage, kind, wanted)
            folder = make_submission(Path(tmp) / f"v{n}", replacements)
            on_gpu = _scores(gpu.grade(folder, seed=7, stages=[stage]))
            on_cpu = _scores(cpu.grade(folder, seed=7, stages=[stage]))
            results.append(check(f"parity: {stage}: {name}", on_gpu == on_cpu,
                                 f"cpu {on_cpu[stage]:g}, cuda {on_gpu[stage]:g}"))
        name, replacements = _variant(*DEVICE_MISTAKE)
        folder = make_submission(Path(tmp) / "device", replacements)
        lost = _scores(gpu.grade(folder, seed=7, stages=["embedding"]))["embedding"] < 20
        results.append(check(f"a hard-coded device loses points on cuda ({name})", lost))
        results.append(check("memory bound on the GPU runner", True, gpu.launcher.memory))

    limits = Limits(probe_seconds=60, submission_seconds=120)  # the default 8 GiB cgroup
    with tempfile.TemporaryDirectory() as tmp, Grader(Options(device="cuda", limits=limits)) as gpu:
        hog = gpu.grade(make_submission(Path(tmp) / "hog", HOG), stages=["embedding"])
        after = gpu.grade(ROOT / "lumen", stages=["embedding"])
        results.append(check("a 64 GiB host allocation is stopped, and costs only its points",
                             _scores(hog)["embedding"] < 20 and _scores(after)["embedding"] == 20,
                             f"hog {_scores(hog)['embedding']:g}/20, then lumen "
                             f"{_scores(after)['embedding']:g}/20"))
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed "
          f"({time.perf_counter() - started:.0f} s)")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
