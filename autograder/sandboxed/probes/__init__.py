"""The probes (``init.py``, for now the whole of them)."""

from .init import PROBES, ProbeError, record_calls, run

__all__ = ["PROBES", "ProbeError", "record_calls", "run"]
