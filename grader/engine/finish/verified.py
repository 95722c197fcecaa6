"""Credit for what was verified: a criterion keeps the points its decisive parts verify, and
of the rest of its points at most a bounded share of what the scorer gave it.

Topical similarity is not content: the scorer pays a fluent wrong answer in the rubric's own
words about three quarters of the points. On a rubric that names its criteria's decisive
parts (``Criterion.parts``), each criterion's points are

    max(verified, min(scorer's allocation, verified + share · (points − verified)))

where ``share`` rises from ``NOTHING_VERIFIED_SHARE`` (no part of any criterion asserted: the
grade rests on similarity alone) to ``UNVERIFIED_SHARE`` once ``FULL_TRUST_AT`` of the points
are verified (an answer that demonstrably addresses the question may word the rest its own way).
Verified points stand even where the scorer gave less. A criterion whose decisive part the
answer denies in so many words (``PartReading.denied``: "loss 不需要除以累积步数") gets none, its
evidence the sentence that denies it, and the answer's unverified criteria get no more than when
nothing is verified: an answer that contradicts the content does not earn its similarity; where
such an answer still keeps more than ``GENEROUS_SHARE`` of the points, a person decides
(``contradicted``, a hard review reason). Nor does a true sentence beside a listed wrong claim
(``Criterion.wrong_claims``, read once per answer by ``finish.wrong_claims`` for this step and
``finish.substance``) earn anything: a criterion whose wrong claim the answer asserts verifies
nothing (``ClaimsCheck.set_aside``), its points are bounded as an unverified criterion's, and it
earns the rest of the answer no trust. A person decides too where a grade above that line rests
on less than that share verified (``thinly_verified``, hard): an answer worth nothing that
states a few true things in the rubric's words beside false ones lands there, and so does a
right one the rules could not read. A grade with nothing verified says so (``unverified``);
either way its confidence is at most ``UNVERIFIED_CONFIDENCE``, and the points withheld rank it
in the review queue. Shares chosen on development data (seed sets 1 and 3):
docs/research/benchmarks-log.md, "Credit for what was verified".

A judge whose own readings are trusted (``claims.trust``: learned per model, at least
``MIN_TRUST``) then decides each criterion in proportion: ``t · judge + (1 − t) · bounded``, the
rules' verification inside the second term. An unmeasured judge, or one that says yes to
everything, has trust 0 and moves nothing; a reader as good as the instructor sets each
criterion where it reads it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from grader.engine.finish.context import Finishing
from grader.engine.finish.substance import GENEROUS_SHARE
from grader.engine.finish.verified_words import (
    contradicted_line,
    contradicted_reason,
    criterion_line,
    thin_reason,
    unverified_reason,
)
from grader.engine.finish.wrong_claims import wrong_claims
from grader.engine.judging.claim_check import MARGIN, ClaimAsk, judge_claims, stated
from grader.engine.judging.feedback import missing_criteria, template_feedback
from grader.engine.reading.claims.parts import (
    contradicted,
    has_parts,
    read_parts,
    verified_by_rules,
    verified_points,
)
from grader.engine.scoring.judge_trust import claim_fit, trust_of
from grader.engine.scoring.points import STEP
from grader.engine.signals.copies import char_ngrams
from grader.models import (
    ClaimsCheck,
    CriterionScore,
    FoundClaim,
    Grade,
    GradeStatus,
    Method,
    PartReading,
    ReviewCode,
    Rubric,
    TrailStep,
)
from grader.text import language_of

UNVERIFIED_SHARE = 0.5
NOTHING_VERIFIED_SHARE = 0.05
FULL_TRUST_AT = 0.7  # of the points verified
UNVERIFIED_CONFIDENCE = 0.5
BOUND_REASONS = frozenset(
    {ReviewCode.UNVERIFIED, ReviewCode.CONTRADICTED, ReviewCode.THINLY_VERIFIED}
)
MIN_TRUST = 0.5  # a judge trusted less decides nothing: its readings stay the scorer's inputs


def checked(
    grade: Grade,
    answer: str,
    rubric: Rubric,
    trust: float = 0.0,
    stem: str = "",
    claims: Sequence[FoundClaim] | None = None,
    parts: list[PartReading] | None = None,
) -> Grade:
    """The grade with its criteria bounded by what the answer was read to assert (``stem``:
    the question's, which a clause repeats to verify nothing), and a judge trusted at least
    ``MIN_TRUST`` (``scoring.judge_trust``) deciding in proportion; ``claims`` and ``parts``:
    the listed wrong claims and the decisive parts as the finishing context read them (the
    parts with the judge's claim check where it was asked: ``ask_claims``), else read here."""
    weighs = trust >= MIN_TRUST and bool(grade.details.judge_points)
    if not _scored(grade) or not (has_parts(rubric) or weighs):
        return grade
    if parts is None:
        parts = read_parts(answer, rubric, stem)
    if claims is None:
        claims = wrong_claims(answer, rubric, char_ngrams(stem))
    set_aside = sorted({c.criterion for c in claims if not c.negated})
    verified = {k: 0.0 if k in set_aside else v for k, v in verified_points(rubric, parts).items()}
    check = ClaimsCheck(
        parts=parts,
        verified=verified,
        set_aside=set_aside,
        unverified_share=share_for(
            verified_by_rules(rubric, parts, set_aside), rubric, bool(contradicted(parts))
        )
        if has_parts(rubric)
        else 1.0,
        language=language_of(answer),
        judge_trust=trust if weighs else None,
    )
    return bound(grade, check, rubric)


def reapply(grade: Grade, rubric: Rubric) -> Grade:
    """A re-scored grade bounded by the reading its first grading recorded (no answer text
    needed): the same bound as a fresh grade."""
    recorded = grade.details.claims
    if recorded is None or not _scored(grade):
        return grade
    fresh = recorded.model_copy(update={"withheld": 0.0, "capped_from": None})
    return bound(grade, fresh, rubric)


def share_for(verified: dict[str, float], rubric: Rubric, contradicts: bool = False) -> float:
    """How much of an unverified criterion's points the scorer may still give: as little as
    when nothing is verified once the answer ``contradicts`` a decisive part."""
    if contradicts:
        return NOTHING_VERIFIED_SHARE
    trust = min(1.0, sum(verified.values()) / rubric.points / FULL_TRUST_AT)
    return round(NOTHING_VERIFIED_SHARE + (UNVERIFIED_SHARE - NOTHING_VERIFIED_SHARE) * trust, 4)


def bound(grade: Grade, check: ClaimsCheck, rubric: Rubric) -> Grade:
    """``grade`` with each criterion bounded by ``check``; the evidence of a verified
    criterion is the clause that verified it."""
    assert grade.score is not None
    by_id = {c.id: c for c in rubric.criteria}
    asserted: dict[str, list[PartReading]] = {}
    for part in check.parts:
        if part.status == "asserted":
            asserted.setdefault(part.criterion, []).append(part)
    judged = (grade.details.judge_points or {}) if check.judge_trust is not None else {}
    against = contradicted(check.parts)
    criteria = []
    for c in grade.criteria:
        top = by_id[c.id].points if c.id in by_id else c.max_points
        v = check.verified.get(c.id, 0.0)
        points = max(v, min(c.points, v + check.unverified_share * (top - v)))
        if c.id in against:
            points = 0.0
        if c.id in judged:  # a trusted judge's own reading decides in proportion
            t = check.judge_trust or 0.0
            points = t * min(top, judged[c.id]) + (1 - t) * points
        if c.id in against:
            criteria.append(contradicted_line(c, points, against[c.id], check.language))
        else:
            criteria.append(criterion_line(c, points, asserted.get(c.id, []), check))
    total = math.floor(sum(c.points for c in criteria) / STEP + 1e-9) * STEP
    score = min(total, rubric.points)
    update: dict[str, float] = {"withheld": round(max(0.0, grade.score - score), 2)}
    if score < grade.score:
        update["capped_from"] = grade.score
    # this bound's own reasons are decided again (a re-score bounds a bounded grade)
    reasons = [r for r in grade.review_reasons if r.code not in BOUND_REASONS]
    confidence = grade.confidence
    generous = score > GENEROUS_SHARE * rubric.points
    if against and generous:
        reasons.append(contradicted_reason(list(against.values()), score, rubric))
    # the rules' reading alone: a judge's claim check adds credit, never trust or a pass, and
    # a grade it lifted over the line with no part the rules read goes to a person too
    ruled = sum(verified_by_rules(rubric, check.parts, check.set_aside).values())
    lifted = any(p.by == "judge" for p in check.parts)
    thin = (
        bool(check.parts)
        and ruled < GENEROUS_SHARE * rubric.points
        and generous
        and not against
        and check.judge_trust is None
    )
    if check.parts and not ruled and grade.score > 0 and not (lifted and thin):
        reasons.append(unverified_reason(check))
    elif thin:
        reasons.append(thin_reason(check, ruled, score, rubric))
    if {r.code for r in reasons} & {ReviewCode.UNVERIFIED, ReviewCode.THINLY_VERIFIED}:
        confidence = min(confidence, UNVERIFIED_CONFIDENCE) if confidence is not None else None
    criteria = scaled_down(criteria, score, check.verified)
    return grade.model_copy(
        update={
            "score": score,
            "criteria": criteria,
            "feedback": _feedback(grade, criteria, rubric, check.language),
            "review_reasons": reasons,
            "needs_review": grade.needs_review or bool(reasons),
            "confidence": confidence,
            "details": grade.details.model_copy(update={"claims": check.model_copy(update=update)}),
        }
    )


def _judged(part: PartReading, gap: float | None, margin: float | None) -> PartReading:
    """A part the rules left absent, with the judge's gap where it was asked, and asserted
    where that gap reaches the judge's margin."""
    if part.status != "absent" or gap is None:
        return part
    if margin is None or not stated(gap, margin):
        return part.model_copy(update={"gap": gap})
    return part.model_copy(update={"status": "asserted", "by": "judge", "evidence": "", "gap": gap})


def _feedback(
    grade: Grade, criteria: list[CriterionScore], rubric: Rubric, language: str
) -> str | None:
    """The template's feedback written again from the bounded criteria (it named what the
    split by coverage missed, not what the answer was read to lack); a judge's is kept."""
    before = template_feedback(language, missing_criteria(rubric, grade.criteria))
    if grade.feedback != before:
        return grade.feedback
    return template_feedback(language, missing_criteria(rubric, criteria))


def _applies(grade: Grade, rubric: Rubric) -> bool:
    return _scored(grade) and has_parts(rubric)


def _scored(grade: Grade) -> bool:
    """A grade a model scored (not an exact, ruled or failed one)."""
    return (
        grade.status == GradeStatus.GRADED
        and grade.method == Method.JUDGE
        and grade.score is not None
    )


def scaled_down(
    criteria: list[CriterionScore], score: float, verified: dict[str, float]
) -> list[CriterionScore]:
    """The criteria, rounded to two places, brought down to the half-point ``score``: the
    difference comes off their unverified points first."""
    excess = sum(c.points for c in criteria) - score
    spare = [max(0.0, c.points - verified.get(c.id, 0.0)) for c in criteria]
    room = float(sum(spare))
    out = []
    for c, free in zip(criteria, spare, strict=True):
        cut = min(free, excess * free / room) if excess > 1e-9 and room > 0 else 0.0
        out.append(c.model_copy(update={"points": round(c.points - cut, 2)}))
    left = sum(c.points for c in out) - score
    if left > 0.005:  # unverified points did not cover it: scale what is left
        factor = score / (score + left)
        out = [c.model_copy(update={"points": round(c.points * factor, 2)}) for c in out]
    return out


def verified_only(grade: Grade) -> Grade:
    """``grade`` capped at what its answer verified plus ``NOTHING_VERIFIED_SHARE`` of the
    rest: for an answer that tried to steer its grader, whose similarity earns no benefit of
    the doubt (``injection_bound``). Only lowers; the cut comes off unverified points first."""
    check = grade.details.claims
    if check is None or not check.parts or grade.score is None or not grade.max_score:
        return grade
    verified = sum(check.verified.values())
    rest = grade.max_score - verified
    cap = math.floor((verified + NOTHING_VERIFIED_SHARE * rest) / STEP + 1e-9) * STEP
    if cap >= grade.score:
        return grade
    criteria = scaled_down(grade.criteria, cap, check.verified)
    withheld = round(check.withheld + grade.score - cap, 2)
    claims = check.model_copy(update={"withheld": withheld})
    details = grade.details.model_copy(update={"claims": claims})
    capped = grade.model_copy(update={"score": cap, "criteria": criteria, "details": details})
    why = (
        f"an answer that addresses its grader keeps the {verified:g} points its content "
        f"verified and at most {NOTHING_VERIFIED_SHARE:.0%} of the rest"
    )
    return capped.moved(TrailStep.INJECTION, grade.score, why)


def part_key(grade: Grade, k: int) -> str:
    """The key of the rubric's ``k``-th decisive part of this answer in a claim-check call."""
    return f"{grade.submission_id}/part{k}"


def ask_claims(grades: Sequence[Grade], contexts: Sequence[Finishing]) -> list[Finishing]:
    """The decisive parts the rules left absent, asked in one call of the judge wherever its
    claim reading decides (``claims_margin``), or of every answer where it is being measured
    (``Finishing.measure_claims``: plan ``full``); a judge that decides nothing is asked nothing.
    An asked answer's context keeps the parts so read (``Finishing.parts``): read once."""
    asks: dict[int, list[ClaimAsk]] = {}
    margins: dict[int, float | None] = {}
    read: dict[int, list[PartReading]] = {}
    for i, (grade, c) in enumerate(zip(grades, contexts, strict=True)):
        if c.judge is None or c.question is None or c.answer is None or c.rubric is None:
            continue
        margins[i] = claims_margin(grade, c.answer, c.trust_file)
        if (margins[i] is None and not c.measure_claims) or not _applies(grade, c.rubric):
            continue
        read[i] = read_parts(c.answer, c.rubric, c.question.stem)
        asks[i] = [
            ClaimAsk(part_key(grade, k), c.question, p.claim, c.answer)
            for k, p in enumerate(read[i])
            if p.status == "absent"
        ]
    if not any(asks.values()):
        return list(contexts)
    judge = contexts[next(iter(asks))].judge
    assert judge is not None
    gaps = judge_claims(judge, [a for batch in asks.values() for a in batch])
    return [
        replace(c, parts=[_judged(p, gaps.get(part_key(grades[i], k)), margins[i])
                          for k, p in enumerate(read[i])])
        if i in asks
        else c
        for i, c in enumerate(contexts)
    ]  # fmt: skip


def claims_margin(grade: Grade, answer: str, trust_file: Path | None) -> float | None:
    """Where the grade's judge states a part in an answer of this language: the margin fitted
    there (``scoring.judge_trust``; None where none was precise enough), else ``MARGIN`` for a
    judge trusted on criteria whose claim check was never fitted, else None."""
    model = grade.provenance.model
    fitted = claim_fit(model, language_of(answer), trust_file)
    if fitted is not None:
        return fitted.margin
    return MARGIN if trust_of(model, trust_file) >= MIN_TRUST else None


def claims_step(grade: Grade, context: Finishing) -> Grade:
    """The finishing step: a model's grade bounded by what its answer was read to assert
    (``checked``); in a re-score (no question in the context), by the reading its grading
    recorded (``reapply``): the same answer, the same reading, whatever the new scorer."""
    rubric = context.rubric
    if rubric is None:
        return grade
    if context.question is not None and context.answer is not None:
        trust = trust_of(grade.provenance.model, context.trust_file)
        new = checked(
            grade, context.answer, rubric, trust, context.question.stem, context.wrong_claims,
            context.parts,
        )  # fmt: skip
    else:
        new = reapply(grade, rubric)
    check = new.details.claims
    if check is None or new.score == grade.score:
        return new
    asserted = [p for p in check.parts if p.status == "asserted"]
    why = (
        f"{sum(check.verified.values()):g} of {rubric.points:g} points verified by what the "
        f"answer asserts; the rest at most {check.unverified_share:.0%} of each criterion's"
    )
    against = contradicted(check.parts)
    if against:
        why += f"; contradicted, its points taken: {', '.join(against)}"
    if check.set_aside:
        why += f"; verifies nothing where a listed wrong claim is asserted: {', '.join(check.set_aside)}"
    if check.judge_trust is not None:
        why += f"; the judge's own reading weighed at its trust {check.judge_trust:.2f}"
    evidence = [p.evidence for p in [*against.values(), *asserted]][:4]
    return new.moved(TrailStep.CLAIMS, grade.score, why, evidence)
