"""The lab notebook's names where nbgrade (autograder/frontends/nbgrade.py) still looks for
them: the module is autograder/publish/notebook.py. A re-export only, until nbgrade imports it
from there.
"""

from autograder.publish.notebook import *  # noqa: F403 - everything, as before the move
from autograder.publish.notebook import (  # noqa: F401 - the names nbgrade imports from here
    ASSIGNMENT,
    NOTEBOOK,
    NotebookError,
    grade_id,
    nbgrader_cells,
)
