"""``python -m exercises COMMAND`` (this package's name): the chapter, live; see cli.py."""

import sys

from .cli import main

sys.exit(main())
