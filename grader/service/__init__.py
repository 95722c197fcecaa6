"""The grading service below its faces: the exams served and their graders, grading a stored
batch, the store (repositories over one SQLAlchemy engine; SQLite or PostgreSQL) and its
migrations, signed webhooks, and dispatching stored submissions to graders.

Imported by the HTTP intake (``grader.api``), the command line and the Celery workers
(``workers``); it knows nothing of HTTP or Celery (the Celery dispatcher, and the task and queue
names, are in ``workers``).
"""
