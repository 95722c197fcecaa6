"""Rubrics: criteria and their levels, penalties, anchors, known wrong claims, the conclusion
an answer must reach."""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    computed_field,
    model_serializer,
)

from grader.models.base import _Model


class Level(_Model):
    """What an answer earning ``points`` on a criterion looks like."""

    points: float = Field(ge=0)
    descriptor: str


# A claim pattern: groups of terms that must all occur in one clause, any order
# (``engine.claims.patterns``: "a|b", "@down", "!negated", "#40~50 gb").
ClaimPattern = list[str]


class WrongClaim(_Model):
    """A known misconception ("学习率越大收敛越快"): an answer asserting it loses ``points``
    (None: all its criterion's). ``when``: the patterns rules recognise it by in other words
    ("运算变少了" for "减少计算量"); without them it is matched by its wording."""

    claim: str = Field(min_length=2)
    points: float | None = Field(default=None, gt=0)
    when: list[ClaimPattern] = Field(default_factory=list, exclude_if=lambda w: not w)


class Part(_Model):
    """A decisive part of a criterion: a claim the answer must assert for ``pays`` of the
    criterion's points (None: all) to count as verified. An answer that says the opposite
    (a pattern read negated) loses the criterion's points, with the sentence named."""

    claim: str = Field(min_length=2)
    when: list[ClaimPattern] = Field(min_length=1)
    pays: float | None = Field(default=None, gt=0)


class Criterion(_Model):
    id: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,15}$", description="Short id, e.g. 'C1'.")
    description: str
    points: float = Field(gt=0)
    levels: list[Level] = Field(default_factory=list)
    key_points: list[str] = Field(default_factory=list)
    wrong_claims: list[WrongClaim] = Field(default_factory=list)
    parts: list[Part] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _without_absent_claims(self, handler: SerializerFunctionWrapHandler) -> dict:
        data = handler(self)  # no key when empty: older rubrics keep their files and versions
        for key in ("wrong_claims", "parts"):
            if not data.get(key, True):
                del data[key]
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


ConclusionKind = Literal["verdict", "value", "formula", "complexity", "choice"]


class Conclusion(_Model):
    """What an answer must conclude (错误; 2^(n-1); O(1); 链式存储结构); a wrong one caps the
    grade at ``cap`` of the points (engine.finish.conclusion). ``gate: false``: shown, never caps."""

    kind: ConclusionKind
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
