"""The hidden autograder: grades a learner's three files against lumen, stage by stage.

``python -m autograder grade PATH`` (or ``make grade SUBMISSION=PATH``). Learner code runs only
in a worker process (``sandboxed/``); the hidden suites (``suites/``), the reference and the
scores stay in this process.
"""
