"""What the store hands out and takes in: plain frozen records, no SQL."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from grader.models import (
    DeliveryStatus,
    Grade,
    GradeStatus,
    JudgeSide,
    Method,
    OverrideRecord,
    SubmissionStatus,
    TrailStep,
)

GRADE_EVENT = "grade.completed"  # a submission's first grade (version 1)
UPDATE_EVENT = "grade.updated"  # every later version of it


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
    removed_at: datetime | None = None


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
    status: SubmissionStatus
    created_at: datetime
    graded_at: datetime | None
    error: str | None
    grade: Grade | None = None
    version: int | None = None  # the grade's version (None: not graded yet)


@dataclass(frozen=True)
class Delivery:
    """A webhook delivery, where it goes, and the grade it announces as the platform sees it."""

    id: int
    status: DeliveryStatus
    attempts: int
    url: str | None
    secret: str
    event: str
    exam: str
    submission_id: str  # the platform's own id
    grade: Grade | None
    change: GradeChange | None = None  # the version it announces


@dataclass(frozen=True)
class GradeChange:
    """One version of a submission's grade as its platform sees it: what changed it, who,
    when, from what to what. ``cursor`` orders a platform's changes (``GET .../changes``)."""

    cursor: int
    submission_id: str  # the platform's own id
    exam: str
    version: int
    cause: str  # engine, override, score, regrade, refit, rubric
    actor: str | None
    rubric_version: str | None
    previous_status: str | None
    previous_score: float | None
    status: str
    score: float | None
    at: datetime
    grade: Grade

    def summary(self) -> dict:
        """What a webhook and the changes feed say about the change, beside the grade."""
        return {
            "cause": self.cause,
            "by": self.actor,
            "at": self.at.isoformat(),
            "rubric_version": self.rubric_version,
            "from": None
            if self.previous_status is None
            else {"status": self.previous_status, "score": self.previous_score},
            "to": {"status": self.status, "score": self.score},
        }


class StoredIdConflict(Exception):
    """Submission ids already stored with a different body; nothing of the request was stored."""

    def __init__(self, external_ids: list[str]):
        self.external_ids = external_ids
        super().__init__(f"already submitted with a different body: {', '.join(external_ids)}")


class QueueFull(Exception):
    """Storing the request would put more than the cap of a platform's submissions in the
    queue; nothing of the request was stored."""

    def __init__(self, queued: int, new: int, cap: int):
        self.queued, self.new, self.cap = queued, new, cap
        super().__init__(
            f"{queued} submissions of this platform are queued and {new} more were posted; "
            f"at most {cap} may wait at once (GRADER_MAX_QUEUED_PER_PLATFORM)"
        )


@dataclass(frozen=True)
class Instructor:
    id: int
    name: str
    key_hash: str
    exams: frozenset[str]
    session_generation: int = 0  # a session cookie of another generation is refused
    removed_at: datetime | None = None


@dataclass(frozen=True)
class HumanEntry:
    """An instructor's score of one answer: a total, and points per criterion when given."""

    instructor: str
    score: float
    criteria: dict[str, float] | None
    created_at: datetime


@dataclass(frozen=True)
class Override:
    """An instructor's grade that wins over the judge's wherever the service returns a grade:
    an override (with its reason) or a score entered on the pages (``criteria``: its points
    per criterion, when given); the newest of them wins."""

    score: float
    reason: str
    instructor: str
    created_at: datetime
    criteria: dict[str, float] | None = None


SCORED_REASON = "scored by an instructor"


@dataclass(frozen=True)
class Saved:
    """What an instructor's write did: whether it stored anything (its truth), and the
    webhook deliveries of the grade versions it made, to send once committed."""

    stored: bool
    deliveries: list[int]

    def __bool__(self) -> bool:
        return self.stored  # the reason a score entered on the pages carries


@dataclass(frozen=True)
class AnswerRow:
    """One answer as the instructor pages show it; ``submission.grade`` is the judge's own."""

    submission: StoredSubmission
    human: HumanEntry | None
    override: Override | None
    open_review: list[dict] | None  # the reasons, while the review is not resolved


@dataclass(frozen=True)
class AnswerCounts:
    """One question's answers as the instructor pages count them, in SQL."""

    answers: int = 0
    graded: int = 0  # with a grade from the judge
    human: int = 0  # scored by an instructor
    open_reviews: int = 0

    def __add__(self, other: AnswerCounts) -> AnswerCounts:
        return AnswerCounts(
            self.answers + other.answers,
            self.graded + other.graded,
            self.human + other.human,
            self.open_reviews + other.open_reviews,
        )


def overridden(grade: Grade, override: Override | None) -> Grade:
    """The grade a platform sees: the override's score, the judge's grade kept in details."""
    if override is None:
        return grade
    why = (
        f"{override.instructor}'s score: {override.reason}"
        if override.reason
        else (f"{override.instructor}'s score")
    )
    criteria = grade.criteria
    if override.criteria:
        criteria = [
            c.model_copy(update={"points": override.criteria[c.id]})
            if c.id in override.criteria
            else c
            for c in grade.criteria
        ]
    return grade.model_copy(
        update={
            "status": GradeStatus.GRADED,
            "score": override.score,
            "criteria": criteria,
            "method": Method.INSTRUCTOR,
            "needs_review": False,
            "details": grade.details.model_copy(
                update={
                    "override": OverrideRecord(
                        score=override.score,
                        reason=override.reason,
                        by=override.instructor,
                        at=override.created_at.isoformat(),
                        judge=JudgeSide(
                            status=grade.status, score=grade.score, method=grade.method
                        ),
                    )
                }
            ),
        }
    ).moved(TrailStep.OVERRIDE, grade.score, why)
