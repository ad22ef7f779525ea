"""Variants of the learner's functions, to check the hidden suites themselves.

Each module ``tests/variants/<stage>.py`` holds two dicts:

- ``CORRECT``: name -> {"module:Qualified.name": source}: different correct implementations
  (index_select vs indexing, scatter vs comparison, ...); each must get the stage's full marks.
- ``MISTAKES``: name -> (replacements, test name, a fragment of the expected message): a known
  mistake from the chapter; the named hidden test must fail, and say so in those words.

``tests/test_grader_variants.py`` builds a submission from lumen with the replacements applied
and grades that stage.
"""
