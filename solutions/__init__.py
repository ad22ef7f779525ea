"""Instructor tooling: ``python -m solutions.release`` generates exercises/ from lumen/."""
