"""The grader's front ends: each turns a place where submissions arrive into ``Grader`` calls
and writes what that place reads back.

``batch.py`` (a class on one machine; ``batch_*.py``: its parts) and ``shards.py`` (a class on a
cluster), ``exports.py`` (Canvas/Moodle gradebooks), ``nbgrade.py`` (nbgrader; ``nbgrade_*.py``:
its steps), ``gradescope.py`` (the Gradescope zip),
``classroom.py`` and ``classroom_runner.py`` (GitHub Classroom), ``prairielearn.py`` and
``prairielearn_build.py`` (PrairieLearn). The core (``grading.py``, ``results.py``) and the
boundary never import a front end.
"""
