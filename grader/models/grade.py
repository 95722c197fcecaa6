"""Submissions and grades: the record exam platforms code against, its review reasons and
the embedding signals it carries."""

from __future__ import annotations

from pydantic import (
    Field,
    model_validator,
)

from grader.models.base import _Model
from grader.models.codes import GradeStatus, Method, ReviewCode, ReviewReason
from grader.models.details import GradeDetails
from grader.models.provenance import GradeProvenance


class Submission(_Model):
    id: str = Field(min_length=1)
    question_id: str = Field(min_length=1)
    answer: str
    student: str | None = None


class CriterionScore(_Model):
    id: str
    points: float
    max_points: float
    evidence: str = ""
    rationale: str = ""


class KeyPointMatch(_Model):
    """The answer's sentence closest in meaning to one rubric key point."""

    criterion: str
    key_point: str
    sentence: str = Field(description="Best-matching sentence of the answer ('' if none).")
    similarity: float
    coverage: float = Field(ge=0, le=1, description="0: no closer than unrelated text; 1: covered.")


class NearDuplicate(_Model):
    """Another student's answer to the same question that is nearly the same text."""

    submission_id: str
    student: str | None = None
    similarity: float


class AnswerSignals(_Model):
    """What answer embeddings say, beside the judge: an instructor checks these in seconds."""

    reference_similarity: float | None = Field(
        description="Cosine with the reference answer; None when the bank has none."
    )
    reference_margin: float | None = Field(
        default=None,
        description="Reference cosine minus how close unrelated text in the answer's language "
        "gets to the reference: the cosine on a scale whose zero means 'unrelated'.",
    )
    reference_z: float | None = Field(
        default=None,
        description="No longer computed (always None): it read the answers that shared the "
        "run, so a score depended on them (issue 27); kept so grades recorded before load.",
    )
    topic_margin: float = Field(
        description="How far above unrelated text the answer sits, near question and reference."
    )
    off_topic: bool = Field(
        default=False,
        description="Near unrelated text: topic margin below offtopic_margin, or peer margin "
        "below offtopic_peer_margin (review; 0 by rule only below offtopic_zero_margin).",
    )
    peer_margin: float | None = Field(
        default=None,
        description="How much closer the answer sits to its nearest classmates' answers (mean "
        "cosine of the 5 nearest; copies and near-duplicates of it left out) than unrelated "
        "text does; None when fewer than 8 other answers remain.",
    )
    key_points: list[KeyPointMatch] = Field(default_factory=list)
    coverage_points: float = Field(
        description="Points if each criterion paid out by its key points' semantic coverage."
    )
    near_duplicates: list[NearDuplicate] = Field(default_factory=list)
    group: str | None = Field(default=None, description="Answer group within the question.")


class GradedAnswer(_Model):
    """An answer a human scored (an instructor, a calibration CSV, a rubric anchor): the
    nearest ones to a new answer of the same question are evidence for its score."""

    id: str = Field(description="Its submission id, or the anchor's id.")
    question_id: str
    answer: str
    score: float = Field(ge=0, description="On the question's scale.")


class Grade(_Model):
    """The record exam platforms code against; one per submission."""

    submission_id: str
    question_id: str
    student: str | None = None
    status: GradeStatus
    score: float | None = Field(description="None unless status is 'graded': never a silent 0.")
    max_score: float | None
    method: Method
    criteria: list[CriterionScore] = Field(default_factory=list)
    feedback: str | None = None
    confidence: float | None = Field(default=None, ge=0, le=1)
    needs_review: bool = False
    review_reasons: list[ReviewReason] = Field(default_factory=list)
    details: GradeDetails = Field(default_factory=GradeDetails)
    signals: AnswerSignals | None = None
    provenance: GradeProvenance = Field(default_factory=GradeProvenance)

    @property
    def retryable(self) -> bool:
        """Unscored only because the judge could not be reached: grade it again later."""
        return any(r.code == ReviewCode.JUDGE_UNAVAILABLE for r in self.review_reasons)

    @model_validator(mode="after")
    def _score_only_when_graded(self) -> Grade:
        if (self.status is GradeStatus.GRADED) != (self.score is not None):
            raise ValueError("score is set exactly when status is 'graded'")
        return self
