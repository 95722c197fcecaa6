"""Domain models: the typed contract between the bank, the graders, the store and the API.

Everything that crosses a boundary (files, HTTP, queue) is one of these pydantic models, so a
bad field fails loudly with its name instead of deep inside the pipeline.
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    computed_field,
    model_serializer,
    model_validator,
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class QuestionType(StrEnum):
    SINGLE_CHOICE = "single_choice"
    MULTIPLE_CHOICE = "multiple_choice"
    TRUE_FALSE = "true_false"
    FILL_BLANK = "fill_blank"
    SHORT_ANSWER = "short_answer"
    CASE_STUDY = "case_study"
    DISCUSSION = "discussion"

    @property
    def objective(self) -> bool:
        """Objective questions are graded exactly, without the judge."""
        return self in _OBJECTIVE


_OBJECTIVE = {
    QuestionType.SINGLE_CHOICE,
    QuestionType.MULTIPLE_CHOICE,
    QuestionType.TRUE_FALSE,
    QuestionType.FILL_BLANK,
}


class MultipleChoiceCredit(StrEnum):
    """How a multiple-choice answer with some of the right letters scores (a setting)."""

    ALL_OR_NOTHING = "all_or_nothing"  # 少选、错选均不得分
    PARTIAL = "partial"  # correct letters / all correct letters, zero with any wrong letter
    HALF = "half"  # half the points for a correct subset, zero with any wrong letter


class SourceRef(_Model):
    """Where a question came from, so an instructor can find it in the paper."""

    file: str
    line: int


class Question(_Model):
    id: str = Field(description="Unique, stable id within the bank, e.g. '000-s1-q3'.")
    number: str = Field(description="The number as printed in the paper (restarts per section).")
    section: str = Field(description="The section header as printed, e.g. '一、單項選擇題'.")
    type: QuestionType
    stem: str
    options: dict[str, str] = Field(default_factory=dict, description="Letter -> option text.")
    answer: str | bool | None = Field(
        default=None,
        description="Letters ('BCD') for choice questions, true/false for true-false, text otherwise.",
    )
    blanks: list[list[str]] = Field(
        default_factory=list,
        description="Fill-in only: accepted alternatives for each blank, in order.",
    )
    explanation: str | None = None
    points: float | None = Field(default=None, ge=0)
    incomplete: bool = Field(default=False, description="Text or answer cut off in the paper.")
    language: Literal["zh", "en"] = "zh"
    source: SourceRef | None = None


class Bank(_Model):
    """A question bank: the questions of one or more imported papers."""

    name: str
    papers: list[str] = Field(default_factory=list)
    questions: list[Question]

    @model_validator(mode="after")
    def _unique_ids(self) -> Bank:
        seen: set[str] = set()
        for q in self.questions:
            if q.id in seen:
                raise ValueError(f"duplicate question id {q.id!r}")
            seen.add(q.id)
        return self

    def get(self, question_id: str) -> Question | None:
        return next((q for q in self.questions if q.id == question_id), None)


# --- rubrics -------------------------------------------------------------------------------


class Level(_Model):
    """What an answer earning ``points`` on a criterion looks like."""

    points: float = Field(ge=0)
    descriptor: str


class WrongClaim(_Model):
    """A known misconception ("学习率越大收敛越快"): an answer asserting it loses ``points``
    (None: all its criterion's). Checked by wording (``engine.substance``)."""

    claim: str = Field(min_length=2)
    points: float | None = Field(default=None, gt=0)


class Criterion(_Model):
    id: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,15}$", description="Short id, e.g. 'C1'.")
    description: str
    points: float = Field(gt=0)
    levels: list[Level] = Field(default_factory=list)
    key_points: list[str] = Field(default_factory=list)
    wrong_claims: list[WrongClaim] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _without_absent_claims(self, handler: SerializerFunctionWrapHandler) -> dict:
        data = handler(self)  # no key when empty: older rubrics keep their files and versions
        if not data.get("wrong_claims", True):
            del data["wrong_claims"]
        return data


class Penalty(_Model):
    """A common error and what it costs."""

    description: str
    points: float = Field(gt=0)
    criterion: str | None = None


class Anchor(_Model):
    """An instructor-graded answer shown to the judge as a worked example.

    ``id`` names it within its rubric. ``grader calibrate promote`` uses the submissions
    file's id (one file, one namespace). The instructor pages serve several platforms whose
    submission ids may coincide ("s1" from two platforms on one exam), so an anchor promoted
    there also carries ``answer_id``, the service store's id of that answer: unique across
    platforms, and naming no platform or student to the other platforms its rubric grades.
    Without ``answer_id`` (every rubric written before, and every CLI promotion) it stays out
    of the YAML and of the rubric's version, so existing files load unchanged.
    """

    id: str
    answer: str
    scores: dict[str, float] = Field(description="Criterion id -> points the instructor gave.")
    note: str | None = None
    answer_id: int | None = Field(
        default=None, ge=1, description="The service's id of the promoted answer, if any."
    )

    @model_serializer(mode="wrap")
    def _without_absent_answer_id(self, handler: SerializerFunctionWrapHandler) -> dict:
        data = handler(self)
        if data.get("answer_id", 0) is None:
            del data["answer_id"]
        return data


class Conclusion(_Model):
    """What an answer must conclude (错误; 2^(n-1); O(1); 链式存储结构); a wrong one caps the
    grade at ``cap`` of the points (engine.conclusion). ``gate: false``: shown, never caps."""

    kind: Literal["verdict", "value", "formula", "complexity", "choice"]
    expected: str = Field(min_length=1)
    accepted: list[str] = Field(default_factory=list)  # equivalent wordings
    wrong: list[str] = Field(default_factory=list)  # known wrong ones (a choice's other options)
    cap: float | None = Field(default=None, ge=0, le=1)
    gate: bool = True


class Rubric(_Model):
    question_id: str
    points: float = Field(gt=0)
    criteria: list[Criterion] = Field(min_length=1)
    penalties: list[Penalty] = Field(default_factory=list)
    anchors: list[Anchor] = Field(default_factory=list)
    reviewed: bool = Field(
        default=True, description="False for rubrics derived automatically, not by an instructor."
    )
    notes: str | None = None
    conclusion: Conclusion | None = Field(default=None, exclude_if=lambda c: c is None)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def version(self) -> str:
        """A hash of the content: any edit yields a new version, so cached grades stay honest."""
        content = self.model_dump(mode="json", exclude={"version"})
        blob = json.dumps(content, ensure_ascii=False, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


# --- submissions and grades ----------------------------------------------------------------


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


# --- the grading service ------------------------------------------------------------------


class SubmissionStatus(StrEnum):
    """A stored submission's way through the service."""

    QUEUED = "queued"  # stored, waiting for (or being given) a grade
    GRADED = "graded"
    FAILED = "failed"  # out of retries: see its error and the dead letters


class DeliveryStatus(StrEnum):
    """A webhook delivery: pending until the platform acknowledges it or retries run out."""

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


# --- the judge's verdict -------------------------------------------------------------------


class CriterionVerdict(_Model):
    """What the judge says about one criterion: a quote first, then why, then the points."""

    evidence: str = ""
    rationale: str = ""
    points: float


class Verdict(_Model):
    """The judge's reply for one answer, validated against the rubric it was asked about."""

    criteria: dict[str, CriterionVerdict]
    feedback: str = ""
