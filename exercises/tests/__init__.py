"""Self-check tests, one file per stage: ``pytest exercises -m embedding`` and so on."""
