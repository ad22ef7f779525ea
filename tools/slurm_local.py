"""A one-node Slurm on loopback, to run deploy/'s Slurm recipe for real (tests/test_slurm.py).

    python -m tools.slurm_local [--timeout S] -- COMMAND...

starts munged (with a key generated in a temporary folder), slurmctld and slurmd (a generated
slurm.conf: this machine's CPUs and memory as the node ``localhost``, one partition, free
ports on 127.0.0.1, no cgroups, no accounting, every state and spool folder in the temporary
one), runs COMMAND with ``SLURM_CONF`` naming that cluster, waits for its queue to empty,
prints each job's final state and stops the daemons. For example:

    python -m tools.slurm_local -- env SUBMISSIONS=/course/submissions SHARDS=2 \\
        deploy/slurm-submit.sh

It needs root (the daemons run as root, and so do the jobs) and the Debian packages slurm-wlm
and munge (``make slurm`` installs them where root and apt-get allow).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Where Debian puts the daemons (not on a user's PATH).
SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo")
START_SECONDS = 60  # for the node to come up idle
STOP_SECONDS = 20  # for each daemon to exit on SIGTERM, and for cancelled jobs to end
LOG_TAIL = 1500  # characters of a daemon's log in a reason


class Unavailable(RuntimeError):
    """Why a local Slurm cannot run here (what to install, or the daemon's own log)."""


def missing() -> str | None:
    """Why a local Slurm cannot even be tried here, or None."""
    if os.geteuid() != 0:
        return "a local Slurm runs its daemons and jobs as root (SlurmUser=root): run as root"
    absent = [name for name in DAEMONS + CLIENTS if shutil.which(name, path=SBIN) is None]
    if absent:
        return (f"{', '.join(absent)} not installed: `make slurm` installs slurm-wlm and "
                "munge (needs root and apt-get)")
    return None


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _node_line(slurmd: str) -> str:
    """``slurmd -C``'s description of this machine (CPUs, sockets, cores, memory), as the
    node ``localhost`` on 127.0.0.1."""
    found = subprocess.run([slurmd, "-C"], capture_output=True, text=True, timeout=30)
    first = (found.stdout.splitlines() or [""])[0]
    if found.returncode != 0 or not first.startswith("NodeName="):
        raise Unavailable(f"slurmd -C could not describe this machine: {found.stderr.strip()}")
    rest = first.split(None, 1)[1] if " " in first else ""
    return f"NodeName=localhost NodeAddr=127.0.0.1 {rest} State=UNKNOWN"


def _tail(path: Path) -> str:
    text = path.read_text(errors="replace") if path.exists() else "(no log)"
    return text[-LOG_TAIL:].strip()


class Cluster:
    """The daemons of a one-node Slurm whose every file is under ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.conf = folder / "slurm.conf"
        self.socket = folder / "munge" / "socket"
        self.daemons: dict[str, subprocess.Popen] = {}

    def env(self) -> dict[str, str]:
        """This process's environment, its own Slurm's variables replaced by this cluster's."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        return {**env, "SLURM_CONF": str(self.conf)}

    def client(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(args, env=self.env(), capture_output=True, text=True,
                              timeout=timeout)

    def log(self, name: str) -> Path:
        return self.folder / f"{name}.log"

    def _daemon(self, name: str, *args: str) -> None:
        """Start ``name`` in the foreground (-D), its own session, its log in log(name)."""
        with open(self.log(name), "wb") as log:
            self.daemons[name] = subprocess.Popen(
                [shutil.which(name, path=SBIN), *args], stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, env=self.env(), start_new_session=True)

    def _alive(self, name: str) -> None:
        code = self.daemons[name].poll()
        if code is not None:
            raise Unavailable(f"{name} exited ({code}); its log ends:\n{_tail(self.log(name))}")

    def _write_conf(self) -> None:
        ctld, slurmd = _free_ports(2)
        lines = [
            "ClusterName=lumen-local", "SlurmctldHost=localhost(127.0.0.1)",
            "SlurmUser=root", "SlurmdUser=root",
            f"SlurmctldPort={ctld}", f"SlurmdPort={slurmd}",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={self.socket}",
            f"StateSaveLocation={self.folder / 'state'}",
            f"SlurmdSpoolDir={self.folder / 'spool'}",
            f"SlurmctldPidFile={self.folder / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.folder / 'slurmd.pid'}",
            f"PlugStackConfig={self.folder / 'plugstack.conf'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none", "MailProg=/bin/true", "ReturnToService=2",
            # a merge whose shards failed is cancelled, not left pending for ever
            "DependencyParameters=kill_invalid_depend",
            "MinJobAge=3600",  # finished jobs' states stay readable (scontrol) for an hour
            _node_line(shutil.which("slurmd", path=SBIN)),
            "PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
        ]
        for sub in ("state", "spool"):
            (self.folder / sub).mkdir()
        (self.folder / "plugstack.conf").write_text("")
        self.conf.write_text("\n".join(lines) + "\n")

    def start(self) -> None:
        """munged, then slurmctld and slurmd; returns once the node is idle, or raises
        Unavailable with the log of the daemon that failed."""
        munge = self.socket.parent
        munge.mkdir(mode=0o711)  # munged: a socket's folders must be searchable by all
        key = munge / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self._daemon("munged", "--foreground", f"--key-file={key}", f"--socket={self.socket}",
                     f"--pid-file={munge / 'munged.pid'}", f"--seed-file={munge / 'seed'}")
        self._write_conf()
        self._wait(lambda: self.socket.exists(), "munged", "its socket")
        self._daemon("slurmctld", "-D", "-c", "-f", str(self.conf))
        self._daemon("slurmd", "-D", "-c", "-N", "localhost", "-f", str(self.conf))
        self._wait(self._idle, "slurmd", "the node idle (sinfo)")

    def _idle(self) -> bool:
        for name in self.daemons:
            self._alive(name)
        return self.client("sinfo", "-h", "-N", "-o", "%T").stdout.strip() == "idle"

    def _wait(self, ready, name: str, what: str) -> None:
        deadline = time.monotonic() + START_SECONDS
        while not ready():
            self._alive(name)
            if time.monotonic() > deadline:
                logs = "\n".join(f"{n}: {_tail(self.log(n))}" for n in self.daemons)
                raise Unavailable(f"no {what} after {START_SECONDS} s; the logs end:\n{logs}")
            time.sleep(0.5)

    def wait_for_queue(self, timeout: float) -> None:
        """Until no job is pending or running; TimeoutError (with the queue) after timeout."""
        deadline = time.monotonic() + timeout
        while queue := self.client("squeue", "-h", "-o", "%i %j %T %r").stdout.strip():
            if time.monotonic() > deadline:
                raise TimeoutError(f"jobs still queued after {timeout:.0f} s:\n{queue}")
            time.sleep(1)

    def states(self) -> dict[str, tuple[str, str]]:
        """Every job this cluster ran: its id (an array task's ``A_K``) -> (name, state)."""
        shown = self.client("scontrol", "-o", "show", "job").stdout
        states = {}
        for line in shown.splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            if "JobId" not in fields:
                continue
            job = (f"{fields['ArrayJobId']}_{fields['ArrayTaskId']}"
                   if "ArrayTaskId" in fields else fields["JobId"])
            states[job] = (fields.get("JobName", ""), fields.get("JobState", ""))
        return states

    def stop(self) -> None:
        """Cancel what is left in the queue, then stop the daemons (newest first)."""
        if self.daemons.get("slurmctld") and self.daemons["slurmctld"].poll() is None:
            try:
                self.client("scancel", "--user=root")
                self.wait_for_queue(STOP_SECONDS)
            except (subprocess.TimeoutExpired, TimeoutError):
                pass
        for daemon in reversed(self.daemons.values()):
            if daemon.poll() is None:
                daemon.terminate()
                try:
                    daemon.wait(STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    daemon.wait(STOP_SECONDS)
            try:  # what the daemon left running in its own session
                os.killpg(daemon.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass


@contextmanager
def cluster() -> Iterator[Cluster]:
    """A running one-node Slurm, stopped (and its folder removed) on the way out, whatever
    happened. Unavailable when it cannot start here."""
    reason = missing()
    if reason:
        raise Unavailable(reason)
    # Not under pytest's 0700 folders: munged wants every folder above its socket searchable.
    folder = Path(tempfile.mkdtemp(prefix="lumen-slurm-"))
    folder.chmod(0o711)
    running = Cluster(folder)
    try:
        running.start()
        yield running
    finally:
        running.stop()
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.slurm_local",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=3600,
                        help="seconds to wait for the queue to empty (default 3600)")
    parser.add_argument("command", nargs="+", help="run with SLURM_CONF set to the cluster")
    args = parser.parse_args(argv)
    try:
        with cluster() as local:
            code = subprocess.run(args.command, env=local.env()).returncode
            local.wait_for_queue(args.timeout)
            states = local.states()
    except (Unavailable, TimeoutError) as e:
        print(f"python -m tools.slurm_local: {e}", file=sys.stderr)
        return 2
    for job, (name, state) in states.items():
        print(f"{job} {name}: {state}")
    failed = any(state != "COMPLETED" for _, state in states.values())
    return code or int(failed)


if __name__ == "__main__":
    sys.exit(main())
