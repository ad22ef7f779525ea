"""Reproducible zips for what the course ships (the handout, the Gradescope autograder).

Every entry gets the same date and fixed permissions, entries are written in the order given,
and the file appears whole or not at all: the same sources always give the same bytes.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable
from pathlib import Path

EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip can hold


def write_zip(out: Path, entries: Iterable[tuple[str, bytes, bool]]) -> Path:
    """Write ``(name, data, executable)`` entries to ``out``, atomically; returns ``out``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data, executable in entries:
            info = zipfile.ZipInfo(name, date_time=EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            archive.writestr(info, data)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_bytes(buffer.getvalue())
    tmp.replace(out)
    return out
