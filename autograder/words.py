"""Counted nouns for messages: ``counted(1, "notebook")`` is "1 notebook", ``counted(3,
"notebook")`` "3 notebooks" (``plural`` for the irregular ones: "entry", "entries")."""

from __future__ import annotations


def counted(n: float, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1; integers get thousands separators."""
    number = f"{n:,}" if isinstance(n, int) else f"{n:g}"
    return f"{number} {noun if n == 1 else plural or noun + 's'}"
