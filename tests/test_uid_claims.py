"""Graders side by side never share a sandbox user (``boundary/launcher.claim_uids``).

A batch's grading processes, two pytest-xdist workers, two operators' batches: each grader
holds a lock on its block of users for as long as it lives, so a second grader, in this
process or another, gets a different block, and a block comes free when its grader closes
it or dies."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from autograder.boundary.launcher import FIRST_UID, UIDS_PER_GRADER, claim_uids
from autograder.results import GraderError

CLAIM = """
import sys
from pathlib import Path
from autograder.boundary.launcher import claim_uids
users, _ = claim_uids(Path(sys.argv[1]))
print(users.start, flush=True)
sys.stdin.read()  # held until the test closes our stdin
"""


def test_two_graders_in_one_process_get_disjoint_users(tmp_path):
    first, fd1 = claim_uids(tmp_path)
    second, fd2 = claim_uids(tmp_path)
    assert first == range(FIRST_UID, FIRST_UID + UIDS_PER_GRADER)
    assert second.start == first.stop and len(second) == UIDS_PER_GRADER
    os.close(fd1)  # the first grader is done: its block is the next one claimed
    again, fd3 = claim_uids(tmp_path)
    assert again == first
    os.close(fd2)
    os.close(fd3)


def test_a_grader_in_another_process_gets_other_users(tmp_path):
    mine, fd = claim_uids(tmp_path)
    other = subprocess.Popen([sys.executable, "-c", CLAIM, str(tmp_path)], text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        theirs = int(other.stdout.readline())
        assert theirs == mine.stop, (mine, theirs)
    finally:
        other.stdin.close()
        other.wait(timeout=30)
    os.close(fd)
    # that process has ended: the kernel dropped its lock, nothing stale is left held
    first, fd1 = claim_uids(tmp_path)
    second, fd2 = claim_uids(tmp_path)
    assert (first.start, second.start) == (mine.start, theirs)
    os.close(fd1)
    os.close(fd2)


def test_a_lock_folder_others_can_write_is_refused(tmp_path):
    folder = tmp_path / "claims"
    folder.mkdir()
    folder.chmod(0o777)
    with pytest.raises(GraderError, match="only it can write"):
        claim_uids(folder)


def test_no_two_stage_processes_of_a_grader_share_a_user():
    """A grader's submissions take its block's users ``UIDS_PER_SUBMISSION`` at a time, and a
    submission's stage processes one each (``Submission.limits``): over every stage of
    lumen/stages.py and several submissions in turn, no user comes up twice."""
    import itertools
    from types import SimpleNamespace

    from autograder.boundary.launcher import UIDS_PER_SUBMISSION
    from autograder.grading import Submission
    from lumen.stages import STAGE_NAMES

    launcher = SimpleNamespace(child_limits=lambda uid: {"uid": uid})
    worker = SimpleNamespace(limits=SimpleNamespace(memory_bytes=1, file_bytes=1),
                             launcher=launcher)
    block = range(FIRST_UID, FIRST_UID + UIDS_PER_GRADER)
    bases = itertools.cycle(block[::UIDS_PER_SUBMISSION])  # as Grader hands them out
    users = [Submission(worker=worker, devices=["cpu"], files={}, uid=next(bases)
                        ).limits(stage)["uid"] for _ in range(5) for stage in STAGE_NAMES]
    assert len(set(users)) == len(users), "two stage processes would share a user"
    assert all(user in block for user in users)
