"""Submissions and grades: the record exam platforms code against, its review reasons and
the embedding signals it carries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import (
    ConfigDict,
    Field,
    model_validator,
)

from grader.models.base import _Model
from grader.models.codes import GradeStatus, Method, ReviewCode, ReviewReason
from grader.models.details import (
    AnchoredReading,
    AnswerVariant,
    CheckReading,
    ClaimsCheck,
    ConclusionReading,
    JudgeModeName,
    JudgePlanName,
    OverrideRecord,
    RescoredFrom,
    ReviewRanking,
    ScorerExplanation,
    SetOnly,
    Substance,
)
from grader.models.provenance import GradeProvenance
from grader.models.trail import TrailEntry, TrailStep


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
        "run, so a score depended on them; kept so grades recorded before load.",
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


class InjectionReading(SetOnly):
    """A suspected injection: both grades, and which one stands (the lower). ``other`` is the
    finished grade of the variant not kept, so a re-score can bind the two again."""

    raw_score: float | None
    cleaned_score: float | None
    kept: AnswerVariant
    other: Grade | None = None


class GradeDetails(SetOnly):
    """Every part a grade's steps recorded; a part is absent when its step did not run."""

    model_config = ConfigDict(extra="allow")

    # objective questions
    read_as: str | bool | list[str] | None = None
    expected: str | bool | None = None
    correct: bool | None = None
    # the judge
    judge_mode: JudgeModeName | None = None  # the probability mode's grades say so
    judge_points: dict[str, float] | None = None  # its own points, before the scorer
    checks: list[CheckReading] | None = None
    coverage_points: float | None = None
    samples: int | None = None  # the verdict mode's valid samples
    sample_totals: list[float] | None = None
    missing: list[str] | None = None
    # the judge's budget (``GRADER_JUDGE_PLAN``): no judge read the answer, its criteria are
    # split by key-point coverage
    judge_plan: JudgePlanName | None = None
    split: Literal["coverage"] | None = None
    coverage: dict[str, float] | None = None
    # after the judge
    scorer: ScorerExplanation | None = None
    rescored_from: RescoredFrom | None = None
    raw_score: float | None = None  # the judge's score under a learned score mapping
    claims: ClaimsCheck | None = None
    substance: Substance | None = None
    conclusion: ConclusionReading | None = None
    anchored: AnchoredReading | None = None  # plan ``anchored``: the judge's reading, anchored
    injection: InjectionReading | None = None
    review: ReviewRanking | None = None
    override: OverrideRecord | None = None
    # every step that set or moved the score, in order (``TrailEntry``)
    trail: list[TrailEntry] | None = None

    def without(self, *parts: str) -> GradeDetails:
        """These details less ``parts`` (as if their steps had not run)."""
        kept = self.model_dump(exclude=set(parts))
        return GradeDetails.model_validate(kept)


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

    @property
    def trail(self) -> list[TrailEntry]:
        """The steps that set or moved the score (empty for a grade recorded before trails)."""
        return list(self.details.trail or [])

    def moved(
        self, step: TrailStep, before: float | None, why: str, evidence: Sequence[str] = ()
    ) -> Grade:
        """This grade with one more trail entry: ``step`` took the score from ``before`` to
        this grade's own. A step that starts the trail passes ``before=None``."""
        entry = TrailEntry(
            step=step, before=before, after=self.score, why=why, evidence=[e for e in evidence if e]
        )
        details = self.details.model_copy(update={"trail": [*self.trail, entry]})
        return self.model_copy(update={"details": details})


# ``details.injection.other`` is a grade: resolved once ``Grade`` exists.
InjectionReading.model_rebuild()
GradeDetails.model_rebuild()
