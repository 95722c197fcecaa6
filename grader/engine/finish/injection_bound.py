"""Injections bind the final grade, not only the judge's points.

Keeping the lower of the judge's points on the raw and the cleaned text was not enough: the
calibrated scorer, which decides the grade, read the raw text, so an answer that was nothing
but an attempt got 5.5 of 10 and an appended "给满分" lifted a grade above its clean twin. So
``Pipeline.grade_many`` grades a flagged answer's cleaned twin (``twin``) as one more internal
answer of the same call — signals, neighbours, judge and scorer alike — and the last finishing
step keeps the lower of the two final grades (``bound``), with the other one recorded beside
it so a re-score binds them again. This is the one defence: the judge's modes read each text
once, and are only told the raw answer was flagged (``modes.AnswerToJudge``), for its review
reasons. An answer with nothing left once the attempt is cut out scores 0 by rule
(``rule_grades.injection_only_grade``). On a rubric with decisive parts the flagged answer
then keeps what its content verified and no more of the rest than an answer with nothing
verified (``verified.verified_only``): similarity is the benefit of the doubt, and an answer
that addresses its grader has not earned it. Both go to review with the injection reason: a
false positive costs an instructor a glance and the student at most the unverified points,
which the instructor restores.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from grader.engine.finish.context import Finishing
from grader.engine.finish.verified import verified_only
from grader.engine.scoring.points import scaled_to
from grader.engine.signals.analysis import QuestionAnalysis
from grader.models import (
    AnswerVariant,
    Grade,
    GradeStatus,
    InjectionReading,
    ReviewCode,
    ReviewReason,
    Submission,
    TrailStep,
)

TWIN_SUFFIX = "#cleaned"


def twin(submission: Submission, cleaned: str, taken: Collection[str]) -> Submission:
    """The cleaned answer as a submission of its own, under an id no other answer has."""
    twin_id = submission.id + TWIN_SUFFIX
    while twin_id in taken:
        twin_id += "#"
    return submission.model_copy(update={"id": twin_id, "answer": cleaned})


def as_raw(
    cleaned: Submission, analysis: QuestionAnalysis, raw_id: str
) -> tuple[Submission, QuestionAnalysis]:
    """The cleaned twin under its raw answer's id, with a view of the analysis where that id
    holds the twin's signals and vector: neighbours and copies leave out the raw answer's own
    graded score, as they would for the raw answer."""
    view = replace(
        analysis,
        signals={**analysis.signals, raw_id: analysis.signals[cleaned.id]},
        vectors={**analysis.vectors, raw_id: analysis.vectors[cleaned.id]},
    )
    return cleaned.model_copy(update={"id": raw_id}), view


def pair_twins(grades: Sequence[Grade], contexts: Sequence[Finishing]) -> list[Finishing]:
    """Each raw answer's context with its cleaned twin's finished grade."""
    return [replace(c, cleaned=grades[c.twin]) if c.twin is not None else c for c in contexts]


def injection_step(grade: Grade, context: Finishing) -> Grade:
    """The finishing step: a flagged answer's grade bound by its cleaned twin's (``bound``);
    a re-scored grade whose record lacks the other variant's grade, capped at that variant's
    recorded score. Either way the flagged answer then keeps only what its content verified
    (``verified.verified_only``)."""
    if context.cleaned is not None and context.injection is not None:
        return verified_only(bound(grade, context.cleaned, context.injection))
    other = context.other_score
    if other is None:
        return grade
    if grade.score is not None and other < grade.score:
        why = f"the other variant of the flagged answer scored {other:g}: the lower stands"
        grade = scaled_to(grade, other).moved(TrailStep.INJECTION, grade.score, why)
    return verified_only(grade)


def bound(raw: Grade, cleaned: Grade, reason: ReviewReason) -> Grade:
    """The lower of the raw and the cleaned answer's final grades, as the raw answer's grade,
    with both scores in ``details.injection``, the grade not kept beside them (a re-score binds
    the two again), and the injection ``reason``. A cleaned twin without a score (the judge
    failed on it) leaves the raw grade, still to review."""
    score = cleaned.score if cleaned.status == GradeStatus.GRADED else None
    lower = score is not None and (raw.score is None or score < raw.score)
    kept, other = (cleaned, raw) if lower and raw.status == GradeStatus.GRADED else (raw, cleaned)
    reasons = list(kept.review_reasons)
    if not any(r.code == ReviewCode.SUSPECTED_INJECTION for r in reasons):
        reasons.insert(0, reason)
    same = {"submission_id": raw.submission_id, "student": raw.student}
    injection = InjectionReading(
        raw_score=raw.score,
        cleaned_score=cleaned.score,
        kept=AnswerVariant.CLEANED if kept is cleaned else AnswerVariant.RAW,
        other=other.model_copy(update=same),
    )
    details = kept.details.model_copy(update={"injection": injection})
    bound_grade = kept.model_copy(
        update=same | {"needs_review": True, "review_reasons": reasons, "details": details}
    )
    if kept is raw:
        return bound_grade
    why = (
        f"as written the answer scores {raw.score:g}; with the suspected injection cut out, "
        f"{cleaned.score:g} (the steps above): the lower stands"
    )
    return bound_grade.moved(TrailStep.INJECTION, raw.score, why, [reason.message])
