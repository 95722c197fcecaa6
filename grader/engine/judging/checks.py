"""What the probability-mode judge is asked about an answer: one narrow question per criterion.

A small judge answers "does the answer state item 3? yes/no" far better than it weighs a whole
rubric at once, and every question after the answer costs prefill time, so each criterion is
asked once, by its number in the rubric the prompt already lists:

- a criterion graded in levels (at least three, whole points up to 9, as instructors write
  them) is asked for a digit 0..points, the levels shown in the shared part of the prompt;
- any other criterion — one statement of the reference in a derived rubric, a one-point
  criterion — is asked yes/no.

The answer to a check is a distribution over single-token labels; the criterion's points are
its expected value, and the distribution's entropy says how sure the judge was.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from grader.models import Criterion, Rubric

YES_NO = {"zh": ("否", "是"), "en": ("no", "yes")}  # worst first, as the protocol orders labels
MAX_DIGIT = 9  # labels are single tokens: the digits 0..9


@dataclass(frozen=True)
class Check:
    """One single-token question about an answer, and what each label is worth."""

    number: int  # 1-based position in the rubric's checks, shown in the prompt
    criterion: str
    kind: Literal["yes_no", "levels"]
    subject: str  # the statement checked: a derived criterion's key point, or the description
    points: float  # the criterion's points
    labels: tuple[str, ...]
    values: tuple[float, ...]  # each label's share of ``points``, same order, ascending

    def expected_points(self, probabilities: Mapping[str, float]) -> float:
        share = sum(p * v for p, v in zip(self._ordered(probabilities), self.values, strict=True))
        return self.points * share

    def entropy(self, probabilities: Mapping[str, float]) -> float:
        """0 when the judge put everything on one label, 1 when it spread it evenly."""
        spread = -sum(p * math.log(p) for p in self._ordered(probabilities) if p > 0)
        return spread / math.log(len(self.labels))

    def _ordered(self, probabilities: Mapping[str, float]) -> list[float]:
        return [probabilities.get(label, 0.0) for label in self.labels]


def _digit_scale(points: float) -> int | None:
    """The top digit when a criterion's points can be the labels themselves: whole, 2..9."""
    return int(points) if float(points).is_integer() and 2 <= points <= MAX_DIGIT else None


def _in_levels(criterion: Criterion) -> bool:
    """Graded in levels by an instructor: three or more distinct level points, and more to it
    than the one statement a derived criterion checks."""
    levels = {level.points for level in criterion.levels}
    return len(levels) >= 3 and len(criterion.key_points) != 1


def checks_for(rubric: Rubric, language: str) -> list[Check]:
    """One check per criterion, in rubric order."""
    yes_no = YES_NO.get(language, YES_NO["en"])
    checks: list[Check] = []
    for number, criterion in enumerate(rubric.criteria, start=1):
        top = _digit_scale(criterion.points)
        kind: Literal["yes_no", "levels"]
        if top is not None and _in_levels(criterion):
            labels = tuple(str(d) for d in range(top + 1))
            values = tuple(d / top for d in range(top + 1))
            kind = "levels"
        else:
            labels, values, kind = yes_no, (0.0, 1.0), "yes_no"
        subject = (
            criterion.key_points[0] if len(criterion.key_points) == 1 else criterion.description
        )
        checks.append(Check(number, criterion.id, kind, subject, criterion.points, labels, values))
    return checks
