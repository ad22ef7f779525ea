# Generated from lumen/__main__.py by `make stubs`: given code, nothing to write here.
# Learners: read it, run it, no need to change it. Course staff: edit lumen/__main__.py.
"""``python -m exercises COMMAND`` (this package's name): the chapter, live; see cli.py."""

import sys

from .cli import main

sys.exit(main())
