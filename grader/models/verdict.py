"""The judge's verdict as its reply is read: points, evidence and rationale per criterion."""

from __future__ import annotations

from grader.models.base import _Model


class CriterionVerdict(_Model):
    """What the judge says about one criterion: a quote first, then why, then the points."""

    evidence: str = ""
    rationale: str = ""
    points: float


class Verdict(_Model):
    """The judge's reply for one answer, validated against the rubric it was asked about."""

    criteria: dict[str, CriterionVerdict]
    feedback: str = ""
