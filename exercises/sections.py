# Generated from lumen/sections.py by `make stubs`: given code, nothing to write here.
# Learners: read it, run it, no need to change it. Course staff: edit lumen/sections.py.
"""A section of what the chapter's commands print: its title, then its body, or one line that
says its stage is not written yet.

Its own module because both explore.py and params.py's command print sections, and explore.py
imports params.py: here neither imports the other back.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .stages import parse_stub_message


def skip_note(error: NotImplementedError, stage: str) -> str:
    """The one line for a section (or a panel) whose stage is not written yet."""
    stub = parse_stub_message(str(error))
    if stub is None:
        return f"stage '{stage}' not implemented yet - skipped ({error})"
    return f"stage '{stub[1]}' not implemented yet - skipped ({stub[0]} is still a stub)"


def section(title: str, stage: str, body: Callable[[], None]) -> None:
    """Print ``title``, then run ``body``; a NotImplementedError skips it instead of crashing."""
    print(f"\n== {title} ==")
    try:
        with torch.set_grad_enabled(False):  # looking, not training
            body()
    except NotImplementedError as error:
        print("  " + skip_note(error, stage))
