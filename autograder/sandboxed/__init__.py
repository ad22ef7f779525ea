"""What runs next to learner code: the wire format, the worker and its probes.

Nothing here imports the rest of the grader, the hidden suites or lumen: this folder is all the
sandbox can see of the grader. The probes return data only; every verdict is reached in the
trusted parent.
"""
