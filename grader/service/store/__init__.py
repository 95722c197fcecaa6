"""The service's durable store: platforms, submissions, grades, review queue, webhook deliveries.

SQLite file by default, PostgreSQL by URL. ``Store`` holds one SQLAlchemy engine and a
repository per job over it, each in its own module:

- ``accounts``: platforms, instructors, server secrets;
- ``counters``: fixed-window request counters (rate limit, failed logins);
- ``intake``: submissions as platforms post them, one with its grade, an exam's export;
- ``queue``: claims of lost work, a task's submissions and cohort, recording grades;
- ``outbox``: webhook deliveries, one per grade version, in order per submission;
- ``versions``: every change to a grade as a version, and a platform's changes since a cursor;
- ``reviews``: the instructor pages' rows, human scores, overrides, the review queue;
- ``review_rank``: the review queue's budget over a question's stored grades;
- ``scorers``: exam scorers refit on the instructor pages, proposed and applied;
- ``rubrics``: rubric versions saved on the instructor pages (the newest of a question rules);
- ``regrades``: a question's stored answers graded again against a new rubric version;
- ``metrics``: totals for ``/metrics``.

The schema (``schema``) is owned by the Alembic migrations in ``grader/service/migrations``;
``Store.migrate`` brings a database to the head revision.
"""

from __future__ import annotations

import sqlalchemy as sa

from grader.service.store.accounts import Accounts
from grader.service.store.counters import Counters
from grader.service.store.engine import make_engine, migrate
from grader.service.store.intake import Intake
from grader.service.store.metrics import Metrics
from grader.service.store.outbox import Outbox
from grader.service.store.queue import Queue
from grader.service.store.records import (
    AnswerCounts,
    AnswerRow,
    Delivery,
    GradeChange,
    HumanEntry,
    Instructor,
    NewSubmission,
    Override,
    Platform,
    QueueFull,
    Saved,
    StoredIdConflict,
    StoredSubmission,
    body_hash,
    utcnow,
)
from grader.service.store.regrades import Regrades
from grader.service.store.review_rank import ReviewRanking
from grader.service.store.reviews import Reviews
from grader.service.store.rubrics import Rubrics
from grader.service.store.schema import metadata
from grader.service.store.scorers import Scorers
from grader.service.store.versions import Versions

__all__ = [
    "AnswerCounts",
    "AnswerRow",
    "Delivery",
    "GradeChange",
    "HumanEntry",
    "Instructor",
    "NewSubmission",
    "Override",
    "Platform",
    "QueueFull",
    "Saved",
    "Store",
    "StoredIdConflict",
    "StoredSubmission",
    "body_hash",
    "metadata",
    "utcnow",
]


class Store:
    """The repositories of one database, sharing its engine; each call is one short transaction."""

    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        self.accounts = Accounts(self.engine)
        self.counters = Counters(self.engine)
        self.intake = Intake(self.engine)
        self.queue = Queue(self.engine)
        self.outbox = Outbox(self.engine)
        self.reviews = Reviews(self.engine)
        self.ranking = ReviewRanking(self.engine)
        self.scorers = Scorers(self.engine)
        self.metrics = Metrics(self.engine)
        self.versions = Versions(self.engine)
        self.rubrics = Rubrics(self.engine)
        self.regrades = Regrades(self.engine)

    def migrate(self) -> None:
        """Bring the schema to the newest migration (idempotent)."""
        migrate(self.url)

    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
