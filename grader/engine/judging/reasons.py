"""Review reasons that compare the judge with what the engine sees without it.

Key-point coverage (wording), embedding signals (meaning), near-duplicates, the judge's own
spread, and the state of the rubric and question: each disagreement or doubt becomes a
``ReviewReason`` that sends the grade to an instructor.
"""

from __future__ import annotations

from collections.abc import Sequence

from grader.config import ReviewSettings
from grader.engine.reading.injection import Finding
from grader.models import AnswerSignals, Question, ReviewCode, ReviewReason, Rubric

COVERAGE_GAP = 0.5  # judge and coverage further apart than half the points: review
COVERED = 0.5  # a key point at least this covered counts as present
HIGH, LOW = 0.6, 0.2  # judge shares of the points that contradict "no key point" / "most"


def duplicate_reasons(signals: AnswerSignals | None) -> list[ReviewReason]:
    """Other students' answers that are nearly the same text (the first three named)."""
    if signals is None or not signals.near_duplicates:
        return []
    others = ", ".join(
        f"{d.submission_id}" + (f" ({d.student})" if d.student else "") + f" {d.similarity:.3f}"
        for d in signals.near_duplicates[:3]
    )
    more = len(signals.near_duplicates) - 3
    return [
        ReviewReason(
            code=ReviewCode.NEAR_DUPLICATE,
            message=f"nearly the same as {others}" + (f" and {more} more" if more > 0 else ""),
        )
    ]


def off_topic_reasons(signals: AnswerSignals | None) -> list[ReviewReason]:
    """A graded answer that sits near unrelated text: by the question and reference (topic
    margin below the off-topic margin) or by its classmates' answers (peer margin)."""
    if signals is None or not signals.off_topic:
        return []
    peers = "" if signals.peer_margin is None else f", peer margin {signals.peer_margin:+.3f}"
    return [
        ReviewReason(
            code=ReviewCode.OFF_TOPIC,
            message=f"close to unrelated text (topic margin {signals.topic_margin:+.3f}{peers}): "
            "graded, but check it is on the question",
        )
    ]


def semantic_reasons(share: float, signals: AnswerSignals) -> list[ReviewReason]:
    """A high score with no key point in sight, or a low one with most of them there."""
    if not signals.key_points:
        return []
    covered = sum(m.coverage >= COVERED for m in signals.key_points)
    total = len(signals.key_points)
    if share >= HIGH and covered == 0:
        message = f"judge gave {share:.0%} of the points but no key point is covered in meaning"
    elif share <= LOW and covered * 3 >= total * 2:
        message = f"judge gave {share:.0%} of the points but {covered} of {total} key points are covered in meaning"
    else:
        return []
    return [ReviewReason(code=ReviewCode.SEMANTIC_DISAGREEMENT, message=message)]


def coverage_reasons(score: float, model_free: float, rubric: Rubric) -> list[ReviewReason]:
    """The judge's score far from what key-point coverage alone would give."""
    if abs(score - model_free) / rubric.points <= COVERAGE_GAP:
        return []
    return [
        ReviewReason(
            code=ReviewCode.COVERAGE_DISAGREEMENT,
            message=f"judge {score:g} vs key-point coverage {model_free:.1f} of {rubric.points:g}",
        )
    ]


def rubric_reasons(question: Question, rubric: Rubric, review_derived: str) -> list[ReviewReason]:
    """A derived rubric, and a question the paper cuts off, need an instructor's eye — once per
    question (``grader rubric check``, the run summary, the instructor pages), so their grades
    go to review for these reasons only when ``review_derived`` is "all"; otherwise review
    keeps the grades that are doubtful for their own reasons."""
    if rubric.reviewed or review_derived != "all":
        return []  # a reviewed rubric completes an incomplete question
    reasons = [
        ReviewReason(
            code=ReviewCode.UNREVIEWED_RUBRIC, message="rubric derived from the reference answer"
        )
    ]
    if question.incomplete:
        reasons.append(
            ReviewReason(
                code=ReviewCode.INCOMPLETE_QUESTION,
                message="the paper's question or reference is cut off",
            )
        )
    return reasons


def injection_reason(findings: Sequence[Finding]) -> ReviewReason:
    """What the injection check found, with the start of the first suspicious span."""
    codes = sorted({f.code for f in findings})
    return ReviewReason(
        code=ReviewCode.SUSPECTED_INJECTION,
        message=f"{', '.join(codes)}: {findings[0].text[:60]!r}",
    )


def model_free_points(coverage: float, signals: AnswerSignals | None) -> float:
    """Key-point coverage without the judge: wording (``coverage``, n-grams) and meaning
    (embeddings) fail on different answers, so both when there are embeddings."""
    return coverage if signals is None else (coverage + signals.coverage_points) / 2


def judged_reasons(
    score: float,
    model_free: float,
    confidence: float,
    signals: AnswerSignals | None,
    question: Question,
    rubric: Rubric,
    review: ReviewSettings,
) -> list[ReviewReason]:
    """Why a judged grade (either mode) goes to review, beyond the judge's own trouble."""
    reasons = coverage_reasons(score, model_free, rubric)
    if signals is not None:
        reasons += semantic_reasons(score / rubric.points, signals)
        reasons += duplicate_reasons(signals) + off_topic_reasons(signals)
    if confidence < review.below_confidence:
        reasons.append(
            ReviewReason(code=ReviewCode.LOW_CONFIDENCE, message=f"confidence {confidence:.2f}")
        )
    return reasons + rubric_reasons(question, rubric, review.derived)
