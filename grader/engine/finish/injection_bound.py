"""Injections bind the final grade, not only the judge's points.

Keeping the lower of the judge's points on the raw and the cleaned text was not enough: the
calibrated scorer, which decides the grade, read the raw text, so an answer that was nothing
but an attempt got 5.5 of 10 and an appended "给满分" lifted a grade above its clean twin
(issue 26). So ``Pipeline.grade_many`` grades a flagged answer's cleaned twin as one more
internal answer of the same call — signals, neighbours, judge and scorer alike — and keeps the
lower of the two final grades (``bound``). This is the one defence: the judge's modes read
each text once, and are only told the raw answer was flagged (``modes.AnswerToJudge``), for
its review reasons. An answer with nothing left once the attempt is cut
out (or only a non-answer) scores 0 by rule (``injection_only_grade``). Both go to review with
the injection reason: a false positive costs an instructor a glance, not the student points.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from grader.engine.judging.reasons import injection_reason
from grader.engine.reading.injection import Flagged
from grader.engine.signals.analysis import QuestionAnalysis
from grader.models import (
    AnswerVariant,
    Grade,
    GradeStatus,
    InjectionReading,
    ReviewCode,
    Submission,
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


def bound(raw: Grade, cleaned: Grade, flagged: Flagged) -> Grade:
    """The lower of the raw and the cleaned answer's final grades, as the raw answer's grade,
    with both scores in ``details.injection`` and the injection reason. A cleaned twin
    without a score (the judge failed on it) leaves the raw grade, still to review."""
    score = cleaned.score if cleaned.status == GradeStatus.GRADED else None
    lower = score is not None and (raw.score is None or score < raw.score)
    kept = cleaned if lower and raw.status == GradeStatus.GRADED else raw
    reasons = list(kept.review_reasons)
    if not any(r.code == ReviewCode.SUSPECTED_INJECTION for r in reasons):
        reasons.insert(0, injection_reason(flagged.findings))
    injection = InjectionReading(
        raw_score=raw.score,
        cleaned_score=cleaned.score,
        kept=AnswerVariant.CLEANED if kept is cleaned else AnswerVariant.RAW,
    )
    details = kept.details.model_copy(update={"injection": injection})
    return kept.model_copy(
        update={
            "submission_id": raw.submission_id,
            "student": raw.student,
            "needs_review": True,
            "review_reasons": reasons,
            "details": details,
        }
    )
