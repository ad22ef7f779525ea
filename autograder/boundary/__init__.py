"""The boundary to learner code, from the grader's side: everything that touches what the
learner's processes are sent or send back.

``intake.py`` takes a submission in (a folder or a .zip, read as data, never imported here);
``launcher.py`` decides where learner code runs (bubblewrap, users, limits); ``request.py`` is
what a stage process is sent (which functions are graded, never a solution); ``client.py``
keeps the worker (start, restart, reap); ``session.py`` talks to a stage's process in it (call
a probe, deadlines); ``replies.py`` holds each probe's reply schema, checked where replies
arrive; ``clean.py`` cleans every string that came from learner code before anything stores or
shows it.

What runs on the other side of this boundary is ``sandboxed/``, which imports nothing of the
grader.
"""
