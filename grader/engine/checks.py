"""What the probability-mode judge is asked about an answer: one narrow question at a time.

A small judge reads "does the answer state this key point? yes/no" far better than it weighs a
whole rubric, so every criterion with key points becomes one yes/no check per key point, each
carrying an equal share of the criterion's points. A criterion without key points becomes one
check on its description whose labels are the digits 0..top (its points as a score). The
answer to a check is a distribution over single-token labels; the check's points are the
expected value, and the distribution's entropy says how sure the judge was.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from grader.models import Rubric

YES_NO = {"zh": ("否", "是"), "en": ("no", "yes")}  # worst first, as the protocol orders labels
MAX_DIGIT = 9  # labels are single tokens: the digits 0..9


@dataclass(frozen=True)
class Check:
    """One single-token question about an answer, and what each label is worth."""

    number: int  # 1-based position in the rubric's checks, shown in the prompt
    criterion: str
    kind: Literal["key_point", "criterion"]
    subject: str  # the key point, or the criterion's description
    points: float  # how many of the criterion's points this check carries
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


def _digit_scale(points: float) -> int:
    """The top digit of a criterion's score scale: its points when whole and ≤ 9, else 5."""
    return int(points) if float(points).is_integer() and 1 <= points <= MAX_DIGIT else 5


def checks_for(rubric: Rubric, language: str) -> list[Check]:
    """The rubric's checks, in rubric order: key points first-class, descriptions otherwise."""
    yes_no = YES_NO.get(language, YES_NO["en"])
    checks: list[Check] = []
    for criterion in rubric.criteria:
        if criterion.key_points:
            share = criterion.points / len(criterion.key_points)
            for point in criterion.key_points:
                checks.append(
                    Check(len(checks) + 1, criterion.id, "key_point", point, share, yes_no, (0, 1))
                )
        else:
            top = _digit_scale(criterion.points)
            checks.append(
                Check(
                    number=len(checks) + 1,
                    criterion=criterion.id,
                    kind="criterion",
                    subject=criterion.description,
                    points=criterion.points,
                    labels=tuple(str(d) for d in range(top + 1)),
                    values=tuple(d / top for d in range(top + 1)),
                )
            )
    return checks
