"""What the store hands out and takes in: plain frozen records, no SQL."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from grader.models import Grade

GRADE_EVENT = "grade.completed"


def utcnow() -> datetime:
    """Naive UTC: SQLite keeps no time zone, so every timestamp is UTC by convention."""
    return datetime.now(UTC).replace(tzinfo=None)


def body_hash(exam: str, question_id: str, answer: str, student: str | None) -> str:
    """What makes two posts of one submission id "the same body"."""
    blob = json.dumps([exam, question_id, answer, student], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class Platform:
    id: int
    name: str
    key_hash: str
    webhook_url: str | None
    webhook_secret: str
    exams: frozenset[str]


@dataclass(frozen=True)
class NewSubmission:
    external_id: str
    exam: str
    question_id: str
    answer: str
    student: str | None = None

    @property
    def body_hash(self) -> str:
        return body_hash(self.exam, self.question_id, self.answer, self.student)


@dataclass(frozen=True)
class StoredSubmission:
    id: int
    platform_id: int
    external_id: str
    exam: str
    question_id: str
    answer: str
    student: str | None
    status: str
    created_at: datetime
    graded_at: datetime | None
    error: str | None
    grade: Grade | None = None


@dataclass(frozen=True)
class Delivery:
    id: int
    status: str
    attempts: int
    url: str | None
    secret: str
    payload: dict


class IdConflict(Exception):
    """Submission ids already stored with a different body; nothing of the request was stored."""

    def __init__(self, external_ids: list[str]):
        self.external_ids = external_ids
        super().__init__(f"already submitted with a different body: {', '.join(external_ids)}")
