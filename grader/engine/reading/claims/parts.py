"""An answer read against its rubric's claims: each decisive part asserted, negated or absent,
and each wrong claim that carries patterns, by rules (``rules``)."""

from __future__ import annotations

from typing import Literal

from grader.engine.reading.claims.listing import keyword_list
from grader.engine.reading.claims.rules import ReadAnswer, read_claim
from grader.models import Criterion, FoundClaim, PartReading, Rubric, WrongClaim

EVIDENCE_CHARS = 120


def has_parts(rubric: Rubric) -> bool:
    """Whether the rubric names what its criteria turn on: only then is a grade verified."""
    return any(c.parts for c in rubric.criteria)


def read_parts(answer: str, rubric: Rubric, stem: str = "") -> list[PartReading]:
    """Every decisive part of every criterion, as the rules read it in the answer; clauses
    that repeat the question's ``stem`` verify nothing, and neither does a bare list of the
    rubric's terms (``listing``)."""
    read = ReadAnswer.of("" if keyword_list(answer, rubric) else answer, stem)
    return [
        PartReading(
            criterion=c.id,
            claim=part.claim,
            status=(reading := read_claim(read, part.when, opposites=True)).status,
            evidence=reading.evidence[:EVIDENCE_CHARS],
            pays=min(c.points, part.pays if part.pays is not None else c.points),
            denied=reading.denied,
        )
        for c in rubric.criteria
        for part in c.parts
    ]


def verified_points(rubric: Rubric, parts: list[PartReading]) -> dict[str, float]:
    """Per criterion, the points its asserted parts verify (never above its points); none
    for a criterion the answer contradicts."""
    points = {c.id: 0.0 for c in rubric.criteria}
    for part in parts:
        if part.status == "asserted":
            points[part.criterion] += part.pays
    against = contradicted(parts)
    return {c.id: 0.0 if c.id in against else min(c.points, points[c.id]) for c in rubric.criteria}


def verified_by_rules(
    rubric: Rubric, parts: list[PartReading], set_aside: list[str]
) -> dict[str, float]:
    """The points the rules' own readings verify (a set-aside criterion's none): what the
    review flags and the trust in the rest of an answer rest on. A judge's reading of a part
    adds that part's credit, never this: it states the true things a fluent wrong answer names."""
    ruled = verified_points(rubric, [p for p in parts if p.by == "rules"])
    return {k: 0.0 if k in set_aside else v for k, v in ruled.items()}


def contradicted(parts: list[PartReading]) -> dict[str, PartReading]:
    """Per criterion, the first of its parts the answer denies in so many words."""
    found: dict[str, PartReading] = {}
    for part in parts:
        if part.status == "negated" and part.denied:
            found.setdefault(part.criterion, part)
    return found


def patterned_wrong_claims(answer: ReadAnswer, criterion: Criterion) -> list[FoundClaim]:
    """The criterion's wrong claims that carry patterns, each found asserted or negated; the
    criterion loses at most its own points however many are asserted."""
    found, taken = [], 0.0
    for wrong in criterion.wrong_claims:
        if not wrong.when:
            continue
        reading = read_claim(answer, wrong.when, strict=True)
        if reading.status == "absent":
            continue
        claim = found_claim(criterion, wrong, reading.evidence, 1.0, reading.status == "negated",
                            taken, "rules")  # fmt: skip
        taken += claim.points
        found.append(claim)
    return found


def found_claim(
    criterion: Criterion,
    wrong: WrongClaim,
    sentence: str,
    containment: float,
    negated: bool,
    taken: float,
    by: Literal["wording", "rules"],
) -> FoundClaim:
    """A wrong claim read in a sentence, with the points it takes: its own (all its
    criterion's by default), never more than the criterion has left after ``taken``; none
    when the answer negates it."""
    points = wrong.points if wrong.points is not None else criterion.points
    points = 0.0 if negated else min(points, criterion.points - taken)
    return FoundClaim(
        criterion=criterion.id,
        claim=wrong.claim,
        sentence=sentence[:80],
        containment=containment,
        negated=negated,
        points=points,
        by=by,
    )
