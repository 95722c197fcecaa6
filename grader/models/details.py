"""The parts of a grade's ``details``: what each step that decided the grade read, one typed
part per step (``GradeDetails`` itself, which holds them, sits beside ``Grade``).

The JSON is the record exam platforms already parse (README, "Submissions and grades"): a
part a grade never went through is absent, not null, so ``GradeDetails`` writes exactly the
parts its writers set (``SetOnly``). Parts nobody here knows (a grades file from a release
that wrote more) are kept and written back as they came.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from grader.models.base import _Model
from grader.models.codes import GradeStatus, Method, ReviewReason
from grader.models.rubric import ConclusionKind


class SetOnly(_Model):
    """A record whose keys are those its writer set: unset fields are left out of the JSON
    (a field set to None is written as null), so a part reads back as it was written."""

    @model_serializer(mode="wrap")
    def _set_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        kept = self.model_fields_set | set(self.model_extra or {})
        return {k: v for k, v in data.items() if k in kept}

    def has(self, key: str) -> bool:
        """Whether the writer set ``key``, perhaps to null (an objective answer read as
        nothing has ``read_as`` null; a judged grade without a judge, ``backend`` null)."""
        return key in self.model_fields_set or key in (self.model_extra or {})


class JudgeModeName(StrEnum):
    """How the judge read an answer (``GRADER_JUDGE_MODE``): label probabilities per check,
    or a generated JSON verdict."""

    PROBABILITY = "probability"
    VERDICT = "verdict"


class AnswerVariant(StrEnum):
    """An answer as written, or its cleaned twin (a suspected injection cut out): whose grade
    of the two stands."""

    RAW = "raw"
    CLEANED = "cleaned"


ConclusionDecision = Literal["match", "mismatch", "undecided"]
JudgePlanName = Literal["budget", "full", "anchored"]


class CheckReading(_Model):
    """One probability-mode check: the judge's label distribution and what it pays."""

    criterion: str
    subject: str
    probabilities: dict[str, float]
    expected_points: float
    entropy: float
    mass: float


class Neighbour(_Model):
    """A graded answer the scorer leaned on, by its id."""

    id: str
    score: float
    similarity: float


class GradedCopy(_Model):
    """A graded answer with the answer's very text: its grade decides (the copy rule)."""

    id: str
    score: float | None  # None: its points are unknown (a fit's rows carry shares only)


class ScorerExplanation(_Model):
    """Who decided a calibrated score, on what, and how much each signal pushed it."""

    version: str | None  # the scorer file's; None for one built in code
    decided_by: str = Field(description="the scorer's model, a graded-neighbour band, or 'copy'")
    share: float
    features: dict[str, bool | int | float | str]
    contributions: dict[str, float]
    neighbours: list[Neighbour]
    copies: list[GradedCopy]

    def with_ids(self, ids: dict[str, str]) -> ScorerExplanation:
        """The explanation with its neighbours and copies renamed by ``ids`` (an id not in it,
        an anchor's, keeps its own)."""
        return self.model_copy(
            update={
                "neighbours": [
                    n.model_copy(update={"id": ids.get(n.id, n.id)}) for n in self.neighbours
                ],
                "copies": [c.model_copy(update={"id": ids.get(c.id, c.id)}) for c in self.copies],
            }
        )


class RescoredFrom(_Model):
    """What a re-score replaced: the previous score and the scorer that gave it."""

    score: float | None
    scorer_version: str | None
    decided_by: str | None


class FoundClaim(_Model):
    """A wrong claim the answer's closest sentence carries, asserted or negated: read by its
    wording (``containment`` of its 3-grams) or by the rubric's patterns (``by: rules``)."""

    criterion: str
    claim: str
    sentence: str
    containment: float
    negated: bool
    points: float  # taken off the grade; 0 when negated
    # records written before rules read claims have no ``by``: they were read by wording
    by: Literal["wording", "rules"] = Field("wording", exclude_if=lambda by: by == "wording")


PartStatus = Literal["asserted", "negated", "absent"]


class PartReading(_Model):
    """One decisive part of a criterion as read in the answer, and the clause it rests on."""

    criterion: str
    claim: str
    status: PartStatus
    evidence: str
    pays: float  # points it verifies when asserted
    by: Literal["rules", "judge"] = "rules"  # the judge: where rules read nothing, at its margin
    # the judge's claim check where it was asked: P(yes) above an empty answer's (``claim_check``)
    gap: float | None = Field(None, exclude_if=lambda gap: gap is None)
    # negated in so many words ("不需要除以N", or a sentence refuting it): the answer
    # contradicts the part, and its criterion's points go (``finish.verified``)
    denied: bool = Field(False, exclude_if=lambda denied: not denied)


class ClaimsCheck(_Model):
    """What the answer was read to assert of its rubric's decisive parts, and what the
    verification left of the scorer's grade: each criterion keeps what was verified plus at
    most ``unverified_share`` of the rest of its points."""

    parts: list[PartReading]
    verified: dict[str, float]  # criterion -> points its asserted parts verify
    unverified_share: float
    language: Literal["zh", "en"] = "zh"  # the answer's: the criteria's lines are written in it
    judge_trust: float | None = None  # the judge's, where its own readings took part
    withheld: float = 0.0  # points the cap took off the scorer's grade
    capped_from: float | None = None
    # criteria whose asserted parts verify nothing: the answer also asserts a listed wrong claim
    # of theirs, so the true sentence beside it earns no trust (``finish.verified``)
    set_aside: list[str] = Field(default_factory=list, exclude_if=lambda ids: not ids)


class Substance(_Model):
    """What an answer adds beyond the question's words, and the wrong claims it makes."""

    language: str
    content_share: float  # of the answer's 3-grams, those neither the stem's nor filler
    reference_share: float  # of that content, the reference's and key points' wording
    concrete: int  # numbers, formulas, identifiers, Latin terms the stem lacks
    restated: bool
    keywords_only: bool = Field(False, exclude_if=lambda listed: not listed)  # claims.listing
    claims: list[FoundClaim] = Field(default_factory=list)

    @property
    def fired(self) -> bool:
        return self.restated or self.keywords_only or any(not c.negated for c in self.claims)


class ConclusionReading(SetOnly):
    """The rubric's conclusion as the rules read it in the answer, and the cap it puts on a
    wrong one; ``capped_from`` only when it capped the score."""

    kind: ConclusionKind
    expected: str
    read: str | None
    evidence: str
    decision: ConclusionDecision
    confidence: float
    by: Literal["rules", "judge"] = "rules"  # the judge reads what the rules leave undecided
    gate: bool
    cap: float
    capped_from: float | None = None


class AnchoredReading(_Model):
    """The judge's share of an answer set between its shares of the question's own reference
    (full marks) and of a content-free answer (0): plan ``anchored``. ``calibrated`` (clipped
    to 0..1) takes ``weight`` of the final share; None when the anchors do not separate."""

    judge_share: float
    reference: float
    zero: float
    calibrated: float | None
    weight: float


class ReviewRanking(_Model):
    """The review queue's reading of a model-scored grade: its expected error in points, its
    place in its question's ranking, and the soft reasons that explain it."""

    expected_error: float | None
    rank: int | None
    ranked: int
    queued: bool
    explanations: list[ReviewReason]


class JudgeSide(_Model):
    """The grade an instructor's override replaced."""

    status: GradeStatus
    score: float | None
    method: Method


class OverrideRecord(_Model):
    """An instructor's override: who, when (ISO 8601), why, and the judge's grade."""

    score: float
    reason: str
    by: str
    at: str
    judge: JudgeSide
