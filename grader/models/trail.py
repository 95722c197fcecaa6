"""A grade's trail: every step that set or moved its score, in order, with why.

The first entry says where the score came from (an objective key, a rule, the judge, a split by
key-point coverage); each later one is a step that moved it (the scorer, the claims read in the answer, the
substance rules,
the conclusion's cap, the injection bound, a learned mapping, an instructor's override). The
last entry's ``after`` is the grade's score. ``grader explain`` and the instructor pages read it.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from grader.models.base import _Model


class TrailStep(StrEnum):
    """The steps that set or move a grade's score, in the order they can run."""

    OBJECTIVE = "objective"  # an objective answer against the bank's key
    RULE = "rule"  # 0 by rule (blank, a non-answer, off topic, an injection alone), or no score
    JUDGE = "judge"  # the judge's points
    COVERAGE = "coverage"  # no judge read the answer: criteria split by key-point coverage
    SCORER = "scorer"  # the calibrated scorer's score
    CLAIMS = "claims"  # criteria bounded by what the answer was read to assert
    SUBSTANCE = "substance"  # a restated question capped, wrong claims deducted
    CONCLUSION = "conclusion"  # a wrong conclusion capped
    INJECTION = "injection"  # the lower of the raw and the cleaned answer's grades
    MAPPING = "mapping"  # a learned score mapping (``grader calibrate apply``)
    OVERRIDE = "override"  # an instructor's score


class TrailEntry(_Model):
    """One step of a grade's trail: its score before and after, why, and what in the answer
    (or the record) it rests on."""

    step: TrailStep
    before: float | None = Field(description="The score before the step; None: it had none.")
    after: float | None = Field(description="The score after it; None: no score.")
    why: str
    evidence: list[str] = Field(default_factory=list)
