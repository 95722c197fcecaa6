"""What an instructor types into the pages, checked: each problem names its form field.

Scores are points on the question's scale (0..max); points per criterion are within each
criterion's points and, when all are given, the total may be left empty (it is their sum).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from grader.models import Criterion, Rubric, WrongClaim
from grader.text import match_key

MAX_REASON_CHARS = 1000
# A wrong claim counts when one or two adjacent sentences of an answer hold most of its
# wording (``engine.finish.substance``): a longer claim would rarely match an answer at all.
MAX_CLAIM_CHARS = 200


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


@dataclass(frozen=True)
class WrongClaimForm:
    criterion: str
    claim: WrongClaim


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


def parse_wrong_claim(form: Mapping[str, str], rubric: Rubric) -> WrongClaimForm:
    """A known wrong claim for one criterion: the typed ``claim``, else the picked
    ``sentence``; ``points`` blank for all the criterion's. Refused when the rubric already
    lists the claim, under any criterion (it would be taken twice)."""
    text = " ".join(((form.get("claim") or "").strip() or form.get("sentence") or "").split())
    if not text:
        raise FormError("claim", "required: pick a sentence of the answer or type the claim")
    if len(text) > MAX_CLAIM_CHARS:
        raise FormError("claim", f"{len(text)} characters; the limit is {MAX_CLAIM_CHARS}")
    if len(match_key(text)) < 2:
        raise FormError("claim", f"{text!r} is too short to recognise in an answer")
    by_id = {c.id: c for c in rubric.criteria}
    criterion = by_id.get(form.get("criterion") or "")
    if criterion is None:
        raise FormError("criterion", f"pick one of {', '.join(by_id)}")
    for c in rubric.criteria:
        if any(match_key(w.claim) == match_key(text) for w in c.wrong_claims):
            raise FormError("claim", f"already a wrong claim of {c.id}")
    points = None
    if (form.get("points") or "").strip():
        points = _points(form, "points", criterion.points)
        if points == 0:
            raise FormError("points", "must be more than 0 (blank: all the criterion's)")
        if points * 2 != int(points * 2):
            raise FormError("points", "whole or half points")
    return WrongClaimForm(criterion.id, WrongClaim(claim=text, points=points))


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


POINTS_HELP = "points per criterion (11011, or 1 1 0.5 1 0), or =3.5 for a total"


def parse_points(text: str, max_score: float, criteria: list[Criterion]) -> HumanScoreForm:
    """The keyboard's score: the points of every criterion in order, spaced (``1 1 0.5 1 0``)
    or, when every criterion's points are below 10, one digit each (``11011``); or ``=3.5``,
    a total only. A one-criterion rubric takes a plain number as its points."""
    text = " ".join(text.split())
    if not text:
        raise FormError("points", f"required: {POINTS_HELP}")
    if text.startswith("="):
        total = _points({"points": text[1:]}, "points", max_score)
        return HumanScoreForm(total, None)
    if not criteria:
        return HumanScoreForm(_points({"points": text}, "points", max_score), None)
    tokens = text.split(" ")
    if len(tokens) == 1 and len(criteria) > 1 and text.isascii() and text.isdigit():
        tokens = list(text)  # one digit per criterion
    if len(tokens) != len(criteria):
        ids = " ".join(c.id for c in criteria)
        raise FormError(
            "points", f"{len(tokens)} value(s) for {len(criteria)} criteria ({ids}): {POINTS_HELP}"
        )
    given = {
        c.id: _points({"points": token}, "points", c.points)
        for c, token in zip(criteria, tokens, strict=True)
    }
    return HumanScoreForm(sum(given.values()), given)
