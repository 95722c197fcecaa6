"""Submissions and grades: the record exam platforms code against, its review reasons and
the embedding signals it carries."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import (
    Field,
    model_validator,
)

from grader.models.base import _Model


class Submission(_Model):
    id: str = Field(min_length=1)
    question_id: str = Field(min_length=1)
    answer: str
    student: str | None = None


class GradeStatus(StrEnum):
    GRADED = "graded"
    UNSCORED = "unscored"  # the engine tried and could not score: see review_reasons
    NEEDS_JUDGE = "needs_judge"  # subjective question and no judge configured
    NO_KEY = "no_key"  # the bank has no reference answer to grade against


class Method(StrEnum):
    EXACT = "exact"
    JUDGE = "judge"
    RULE = "rule"  # decided without a model (e.g. a blank answer)
    NONE = "none"
    INSTRUCTOR = "instructor"  # an instructor's override; the judge's grade is in details


class ReviewCode(StrEnum):
    """Why a grade goes to an instructor (or why it has no score); the JSON keeps the value."""

    # objective questions
    NO_KEY = "no_key"  # the bank has no answer key
    UNREADABLE_ANSWER = "unreadable_answer"  # not a letter, a true/false mark, an answer
    NO_SUCH_OPTION = "no_such_option"
    BLANK_COUNT = "blank_count"  # fill-in: not as many answers as blanks
    # decided by rule, without the judge
    BLANK = "blank"
    NON_ANSWER = "non_answer"  # "不知道", "I don't know"
    OFF_TOPIC = "off_topic"
    NEAR_DUPLICATE = "near_duplicate"
    NEEDS_JUDGE = "needs_judge"  # subjective question and no judge configured
    # the judge
    JUDGE_UNAVAILABLE = "judge_unavailable"  # transient: the answer is graded again later
    JUDGE_FAILED = "judge_failed"  # replied, but never with a valid verdict
    JUDGE_PARTIAL = "judge_partial"  # some self-consistency samples failed
    EVIDENCE_NOT_FOUND = "evidence_not_found"
    SUSPECTED_INJECTION = "suspected_injection"
    COVERAGE_DISAGREEMENT = "coverage_disagreement"
    SEMANTIC_DISAGREEMENT = "semantic_disagreement"
    LOW_CONFIDENCE = "low_confidence"
    SCORER_DISAGREEMENT = "scorer_disagreement"  # the judge and the calibrated score far apart
    EXPECTED_ERROR = "expected_error"  # in the top of its question's ranking (review_queue)
    RUBRIC_COPY = "rubric_copy"  # the answer pastes the rubric's own wording
    RESTATED_QUESTION = "restated_question"  # nothing checkable beyond the question's words
    WRONG_CLAIM = "wrong_claim"  # asserts one of the rubric's known misconceptions
    # the rubric and the question
    UNREVIEWED_RUBRIC = "unreviewed_rubric"
    INCOMPLETE_QUESTION = "incomplete_question"
    CONCLUSION_UNDECIDED = "conclusion_undecided"  # the rules could not read the conclusion


class ReviewReason(_Model):
    code: ReviewCode = Field(description="Machine-readable, e.g. 'incomplete_question'.")
    message: str


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
        description="The reference margin as a z-score among this question's answers "
        "(None when the question has fewer than 5).",
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
    details: dict[str, Any] = Field(default_factory=dict)
    signals: AnswerSignals | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)

    @property
    def retryable(self) -> bool:
        """Unscored only because the judge could not be reached: grade it again later."""
        return any(r.code == ReviewCode.JUDGE_UNAVAILABLE for r in self.review_reasons)

    @model_validator(mode="after")
    def _score_only_when_graded(self) -> Grade:
        if (self.status is GradeStatus.GRADED) != (self.score is not None):
            raise ValueError("score is set exactly when status is 'graded'")
        return self
