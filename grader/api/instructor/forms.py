"""What an instructor types into the pages, checked: each problem names its form field.

Scores are points on the question's scale (0..max); points per criterion are within each
criterion's points and, when all are given, the total may be left empty (it is their sum).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from grader.models import Criterion

MAX_REASON_CHARS = 1000


class FormError(ValueError):
    """Bad input in one field; the message starts with the field's name."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True)
class HumanScoreForm:
    score: float
    criteria: dict[str, float] | None


@dataclass(frozen=True)
class OverrideForm:
    score: float
    reason: str


def criterion_field(criterion_id: str) -> str:
    return f"c_{criterion_id}"


def parse_human_score(
    form: Mapping[str, str], max_score: float, criteria: list[Criterion]
) -> HumanScoreForm:
    """A total, and points on every criterion or on none."""
    given = {
        c.id: _points(form, criterion_field(c.id), c.points)
        for c in criteria
        if (form.get(criterion_field(c.id)) or "").strip()
    }
    missing = [c.id for c in criteria if c.id not in given]
    if given and missing:
        raise FormError(
            criterion_field(missing[0]),
            f"give points for every criterion or for none (missing: {', '.join(missing)})",
        )
    if not (form.get("score") or "").strip():
        if not given:
            raise FormError("score", "required (or points for every criterion)")
        return HumanScoreForm(sum(given.values()), given)
    score = _points(form, "score", max_score)
    if given and abs(sum(given.values()) - score) > 1e-9:
        raise FormError(
            "score", f"{score:g}, but the criterion points add up to {sum(given.values()):g}"
        )
    return HumanScoreForm(score, given or None)


def parse_override(form: Mapping[str, str], max_score: float) -> OverrideForm:
    score = _points(form, "score", max_score)
    reason = (form.get("reason") or "").strip()
    if not reason:
        raise FormError("reason", "required: say why the judge's grade is overridden")
    if len(reason) > MAX_REASON_CHARS:
        raise FormError("reason", f"{len(reason)} characters; the limit is {MAX_REASON_CHARS}")
    return OverrideForm(score, reason)


def _points(form: Mapping[str, str], field: str, maximum: float) -> float:
    text = (form.get(field) or "").strip()
    if not text:
        raise FormError(field, "required")
    try:
        value = float(text)
    except ValueError:
        raise FormError(field, f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0 or value > maximum + 1e-9:
        raise FormError(field, f"{text} is outside 0..{maximum:g}")
    return value
