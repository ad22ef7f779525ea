"""nbgrader's configuration for the course, used to release the lab notebook and to grade it.

`make release` copies this file, the lab's source notebook (source/embedding_layer/lab.ipynb)
and exercises/ into a scratch course and runs nbgrader generate_assignment there.
`python -m autograder nbgrade` (make nbgrade) grades submissions in a course folder built from
it, adding the grading settings (autograder/frontends/nbgrade.py). An instructor who runs
nbgrader's own commands in that folder gets the same settings.
"""

c = get_config()  # noqa: F821 - nbgrader defines it while it reads this file

ASSIGNMENT = "embedding_layer"  # a Python identifier: the learner's folder is a package

c.CourseDirectory.course_id = "embedding-layer"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", ".generated.json",
                            ".pytest_cache", ".backup-*"]
c.GenerateAssignment.create_assignment = True
# nbgrader validate (a learner's Validate button) runs the notebook: bound its kernel.
c.Execute.timeout = 600
c.Execute.startup_timeout = 120
c.Execute.interrupt_on_timeout = True
