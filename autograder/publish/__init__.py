"""What the grader needs of the release: the room between lumen/ and what learners get.

``stubber.py`` (lumen's solution regions become stubs: a grade sends them as given code),
``render.py`` (every file of exercises/ and its freshness), ``notebook.py`` (the lab notebook
by nbgrader, with rubric.toml's points), ``handout.py`` (the files a learner receives, which
the Classroom template ships too) and ``zips.py`` (reproducible zips: the handout, the
Gradescope autograder). It imports only the core of the grader and lumen; solutions/ (the
release command, ``make release``) and the front ends import it, never the other way round.
"""

#: What marks a piece of a new stage that a maintainer has yet to write: in the files
#: ``make new-stage`` writes (solutions/new_stage.py) and the notebook cells the release adds
#: for a stage (notebook.py). tests/test_stage_lists.py fails on each line that still says it.
SKELETON = "SKELETON"
