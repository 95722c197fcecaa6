"""From the judge's checked verdicts to one grade: points, confidence and review reasons.

Per criterion the median of the samples' points, after each quote is checked against the
answer (``grader.engine.judging.evidence``). A suspected injection is named among the review reasons;
the pipeline grades its cleaned twin and keeps the lower grade (``finish.injection_bound``). Confidence falls with the samples' spread and with the gap to
key-point coverage (wording and, with embeddings, meaning): they fail on different answers.
A judge that gave no verdict yields ``unscored`` with a reason, never a silent 0.
"""

from __future__ import annotations

import statistics

from grader.config import ReviewSettings
from grader.engine.judging.evidence import check_verdict
from grader.engine.judging.reasons import injection_reason, judged_reasons, model_free_points
from grader.engine.judging.rule_grades import identity, unscored_grade
from grader.engine.judging.verdict_requests import VerdictWork
from grader.engine.signals.coverage import coverage_points
from grader.models import (
    CriterionScore,
    Grade,
    GradeDetails,
    GradeProvenance,
    GradeStatus,
    Method,
    ReviewCode,
    ReviewReason,
    Rubric,
    TrailStep,
    Verdict,
)

_NOTES = {
    "not_in_answer": " [quoted evidence not in the answer]",
    "reused": " [the same quote was used for too many criteria]",
}


def verdict_grade(item: VerdictWork, provenance: GradeProvenance, review: ReviewSettings) -> Grade:
    """The grade of an answer judged by a JSON verdict."""
    good = [r.verdict for r in item.replies if r.verdict is not None]
    if not good:
        return _unscored(item, provenance)
    rubric, answer = item.prefix.rubric, item.submission.answer
    criteria, totals, score, feedback, reasons = _scored(item, good)
    coverage = coverage_points(rubric, answer)
    model_free = model_free_points(coverage, item.signals)
    spread = (max(totals) - min(totals)) / rubric.points if len(totals) > 1 else 0.0
    gap = abs(score - model_free) / rubric.points
    confidence = round(max(0.0, min(1.0 - spread, 1.0 - gap)), 3)
    reasons += judged_reasons(
        score, model_free, confidence, item.signals, item.prefix.question, rubric, review
    )
    return Grade(
        **identity(item.submission),
        status=GradeStatus.GRADED,
        score=round(score, 4),
        max_score=rubric.points,
        method=Method.JUDGE,
        criteria=criteria,
        feedback=feedback or None,
        confidence=confidence,
        needs_review=bool(reasons),
        review_reasons=reasons,
        details=GradeDetails(
            coverage_points=round(coverage, 2), samples=len(good), sample_totals=totals
        ),
        signals=item.signals,
        provenance=provenance,
    ).moved(
        TrailStep.JUDGE,
        None,
        f"the judge's verdict, the median of {len(good)} sample(s), quotes checked against "
        "the answer",
    )


def _scored(
    item: VerdictWork, good: list[Verdict]
) -> tuple[list[CriterionScore], list[float], float, str, list[ReviewReason]]:
    """Criteria, sample totals, score and feedback from the verdicts, with the reasons the
    verdicts themselves give (invented quotes, an injection, failed samples)."""
    reasons: list[ReviewReason] = []
    criteria, totals, unsupported = aggregate(good, item.prefix.rubric, item.submission.answer)
    if unsupported:
        reasons.append(
            ReviewReason(
                code=ReviewCode.EVIDENCE_NOT_FOUND,
                message=f"quoted evidence missing from the answer or reused, scored 0: {', '.join(sorted(unsupported))}",
            )
        )
    score = sum(c.points for c in criteria)
    feedback = good[0].feedback
    if item.injections:
        reasons.append(injection_reason(item.injections))
    if len(good) < len(item.replies):
        reasons.append(
            ReviewReason(
                code=ReviewCode.JUDGE_PARTIAL,
                message=f"{len(item.replies) - len(good)} of {len(item.replies)} samples failed",
            )
        )
    return criteria, totals, score, feedback, reasons


def aggregate(
    verdicts: list[Verdict], rubric: Rubric, answer: str
) -> tuple[list[CriterionScore], list[float], set[str]]:
    """Per criterion the median of the checked sample points; also each sample's total."""
    unsupported: dict[str, str] = {}  # criterion id -> why its points were taken away
    checked: list[dict[str, float]] = []
    quotes: dict[str, str] = {}
    for verdict in verdicts:
        points = {}
        for cid, (value, quote, problem) in check_verdict(verdict, rubric, answer).items():
            points[cid] = value
            if problem:
                unsupported.setdefault(cid, problem)
            elif quote:
                quotes.setdefault(cid, quote)
        checked.append(points)
    scores = []
    for c in rubric.criteria:
        first = verdicts[0].criteria[c.id] if verdicts else None
        median = statistics.median(p[c.id] for p in checked) if checked else 0.0
        note = _NOTES[unsupported[c.id]] if c.id in unsupported and not median else ""
        scores.append(
            CriterionScore(
                id=c.id,
                points=float(median),
                max_points=c.points,
                evidence=quotes.get(c.id, ""),
                rationale=(first.rationale if first else "") + note,
            )
        )
    return scores, [round(sum(p.values()), 4) for p in checked], set(unsupported)


def _unscored(item: VerdictWork, provenance: GradeProvenance) -> Grade:
    replies = item.replies
    reason = next((r.error for r in replies if r.error), "no verdict")
    why = f"no valid verdict after {replies[0].attempts} attempt(s): {reason}"
    transient = all(r.transient for r in replies)
    return unscored_grade(item.submission, item.prefix.rubric, transient, why, provenance)
