"""What platforms send and get back: the HTTP contract, validated at the boundary."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from grader.models import Grade, SubmissionStatus
from grader.text import unstorable


def storable(text: str) -> str:
    """Text every database takes: no NUL, no lone surrogate (the same answer on SQLite and
    PostgreSQL, and a 422 instead of an error from the driver)."""
    problem = unstorable(text)
    if problem:
        raise ValueError(problem)
    return text


Text = Annotated[str, AfterValidator(storable)]


class SubmissionIn(BaseModel):
    """One answer to grade. ``id`` is the platform's own id: posting it again is safe."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    id: Text = Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")
    exam: Text = Field(min_length=1, max_length=200, description="the bank's name")
    question_id: Text = Field(min_length=1, max_length=200)
    answer: Text
    student: Text | None = Field(default=None, max_length=200)


class Accepted(BaseModel):
    id: str
    status: SubmissionStatus
    duplicate: bool = Field(description="this id was posted before with the same body")


class SubmitResponse(BaseModel):
    submissions: list[Accepted]


class SubmissionOut(BaseModel):
    id: str
    exam: str
    question_id: str
    student: str | None
    status: SubmissionStatus
    submitted_at: datetime
    graded_at: datetime | None
    error: str | None = None
    grade: Grade | None = None
    version: int | None = Field(
        default=None,
        description="the grade's version: 1 when first graded, one more with each change "
        "(an instructor's score or override, a regrade, a refit, a rubric edit)",
    )


class GradeState(BaseModel):
    status: str
    score: float | None


class ChangeSummary(BaseModel):
    """What changed a grade: the same object a webhook carries as ``change``."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    cause: str = Field(description="engine, override, score, regrade, refit or rubric")
    by: str | None = Field(description="the instructor; null for the engine")
    at: datetime
    rubric_version: str | None
    from_: GradeState | None = Field(alias="from", description="null for the first grade")
    to: GradeState


class ChangeOut(BaseModel):
    cursor: int = Field(description="pass the last one seen as ``after`` to read on")
    submission_id: str
    version: int
    change: ChangeSummary
    grade: Grade = Field(description="the grade of this version, as webhooks sent it")


class ChangesOut(BaseModel):
    changes: list[ChangeOut]
    next: int = Field(description="the cursor to read on from (``after``)")
    more: bool = Field(description="more changes wait past ``next``")


class ExamOut(BaseModel):
    name: str
    questions: int
    subjective: int


class Health(BaseModel):
    database: str
    broker: str
