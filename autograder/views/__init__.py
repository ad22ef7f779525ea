"""How a ``Grade`` is shown: the terminal report, Gradescope's results.json and JUnit XML
(``report.py``), and one escaping function per kind of output a learner-derived string can land
in (``escape.py``: CSV cell, Markdown/HTML, terminal). Views read a ``Grade`` and write files;
they never grade.
"""
