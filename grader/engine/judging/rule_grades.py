"""Grades decided without the judge: objective questions exactly, and subjective answers that
score 0 by rule (blank, a non-answer, off topic) or cannot be scored (no judge configured).

An off-topic answer scores 0 but always goes to review: that decision came from embedding
similarity, not from reading the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeGuard

from grader.config import RuleSettings, SignalSettings
from grader.engine.judging.provenance import ENGINE, objective_provenance, rule_provenance
from grader.engine.judging.reasons import duplicate_reasons, injection_reason, off_topic_reasons
from grader.engine.reading.injection import Flagged
from grader.engine.reading.objective import grade_objective
from grader.models import (
    AnswerSignals,
    AnswerVariant,
    CriterionScore,
    Grade,
    GradeDetails,
    GradeProvenance,
    GradeStatus,
    InjectionReading,
    Method,
    Question,
    ReviewCode,
    ReviewReason,
    Rubric,
    Submission,
    TrailStep,
)

if TYPE_CHECKING:
    from grader.engine.signals.analysis import QuestionAnalysis

_BLANK_MESSAGES = {
    ReviewCode.BLANK: "blank or too short: 0 without the judge",
    ReviewCode.NON_ANSWER: "no answer in it (says so, claims full marks, or is a verdict fragment): 0 without the judge",
}


def identity(submission: Submission) -> dict[str, Any]:
    """The fields every grade of ``submission`` starts with."""
    return {
        "submission_id": submission.id,
        "question_id": submission.question_id,
        "student": submission.student,
    }


def objective_grade(submission: Submission, question: Question, rules: RuleSettings) -> Grade:
    """Exact grading against the bank's key; no key or no answer are said, not guessed."""
    max_points = question.points if question.points is not None else rules.default_objective_points
    provenance = objective_provenance(rules)
    if question.answer is None:
        return Grade(
            **identity(submission),
            status=GradeStatus.NO_KEY,
            score=None,
            max_score=max_points,
            method=Method.NONE,
            needs_review=True,
            review_reasons=[
                ReviewReason(code=ReviewCode.NO_KEY, message="the bank has no answer key")
            ],
            provenance=provenance,
        ).moved(TrailStep.OBJECTIVE, None, "the bank has no answer key: no score")
    if not submission.answer.strip():
        return Grade(
            **identity(submission),
            status=GradeStatus.GRADED,
            score=0.0,
            max_score=max_points,
            method=Method.RULE,
            review_reasons=[ReviewReason(code=ReviewCode.BLANK, message="no answer given")],
            details=GradeDetails(expected=question.answer),
            provenance=provenance,
        ).moved(TrailStep.OBJECTIVE, None, "no answer given")
    result = grade_objective(question, submission.answer, max_points, rules.multiple_choice_credit)
    return Grade(
        **identity(submission),
        status=GradeStatus.GRADED,
        score=result.points,
        max_score=max_points,
        method=Method.EXACT,
        confidence=None if result.reasons else 1.0,
        needs_review=bool(result.reasons),
        review_reasons=result.reasons,
        details=GradeDetails(
            read_as=result.read_as, expected=question.answer, correct=result.correct
        ),
        provenance=provenance,
    ).moved(
        TrailStep.OBJECTIVE,
        None,
        f"read as {result.read_as!r}, the key is {question.answer!r}",
        [submission.answer.strip()],
    )


def blank_grade(submission: Submission, rubric: Rubric, why: ReviewCode) -> Grade:
    """0 for a blank answer or a non-answer ("不知道"), sure of it."""
    reason = ReviewReason(code=why, message=_BLANK_MESSAGES[why])
    return zero_by_rule(submission, rubric, "blank answer", [reason], 1.0)


def rubric_copy_grade(submission: Submission, rubric: Rubric) -> Grade:
    """0 by rule for an answer that pastes the marking scheme, and to review: an instructor
    should see it."""
    reason = ReviewReason(
        code=ReviewCode.RUBRIC_COPY,
        message="the answer copies the rubric's own wording (criteria or their key points): "
        "0 without the judge",
    )
    return zero_by_rule(submission, rubric, "rubric copied", [reason], 0.9, needs_review=True)


def nearest_scored(analysis: QuestionAnalysis | None, submission_id: str) -> float | None:
    """The cosine of the answer to its nearest graded answer of the question with a positive
    human score (never itself); None without one. It reads the answer and the graded answers
    only, so it is the same alone, in a batch or among all: one answer, one grade."""
    if analysis is None or submission_id not in analysis.vectors:
        return None
    me = analysis.vectors[submission_id]
    sims = [
        float(me @ analysis.vectors[g.id])
        for g, _ in analysis.graded
        if g.score > 0 and g.id != submission_id and g.id in analysis.vectors
    ]
    return max(sims, default=None)


def zero_off_topic(
    signals: AnswerSignals | None, settings: SignalSettings, nearest: float | None = None
) -> TypeGuard[AnswerSignals]:
    """Off topic far enough to score 0 unread: a topic margin below ``offtopic_zero_margin``
    (unset: below ``offtopic_margin``, every answer the margin calls off topic). The second
    margin grades the answers near the line like any other, keeping their ``off_topic`` flag
    for review: short references put genuine answers there (49 Mohler development answers
    below the first margin average 2.9 of 5; the 15 between 0.02 and 0.025, 3.6). Blatant ones
    sit lower (a hot-pot dinner, a football match: 72 pairs of off-topic text and seed
    question, all below 0.018), so the default second margin, 0.02, still scores them 0
    (docs/research/benchmarks-log.md, "The off-topic rule").

    The answer's own margin decides, never its classmates' answers: a rescue of the answers
    among them (``peer_margin``) made a score depend on who shared the run, and is gone (one
    answer, one grade); the peer margin still flags for review. The graded
    answers may rescue it, as they are the same for every run: ``nearest`` (``nearest_scored``),
    the cosine to the nearest graded answer that scored above 0, at
    ``offtopic_graded_rescue`` or closer grades it (flagged off topic, for review). Mohler
    development, 10 graded answers: Pearson 0.699 -> 0.753; every blatant text stays below."""
    if signals is None:
        return False
    limit = settings.offtopic_zero_margin
    line = settings.offtopic_margin if limit is None else min(limit, settings.offtopic_margin)
    if nearest is not None and nearest >= settings.offtopic_graded_rescue:
        return False
    return signals.topic_margin < line


def off_topic_grade(
    submission: Submission, rubric: Rubric, signals: AnswerSignals, embed_model: str | None
) -> Grade:
    """0 by rule, but always to review: the decision came from similarity, not reading."""
    off_topic = ReviewReason(
        code=ReviewCode.OFF_TOPIC,
        message=f"no closer to the question and reference than unrelated text "
        f"(margin {signals.topic_margin:+.3f}): 0 without the judge",
    )
    reasons = [off_topic, *duplicate_reasons(signals)]
    return zero_by_rule(
        submission, rubric, "off topic", reasons, 0.5, signals, embed_model, needs_review=True
    )


def unscored_grade(
    submission: Submission,
    rubric: Rubric,
    transient: bool,
    why: str,
    provenance: GradeProvenance,
) -> Grade:
    """The judge gave nothing to score (either mode): no score, and a reason that tells a
    rerun whether to try again (unavailable) or not (failed)."""
    return Grade(
        **identity(submission),
        status=GradeStatus.UNSCORED,
        score=None,
        max_score=rubric.points,
        method=Method.JUDGE,
        needs_review=True,
        review_reasons=[
            ReviewReason(
                code=ReviewCode.JUDGE_UNAVAILABLE if transient else ReviewCode.JUDGE_FAILED,
                message=why,
            )
        ],
        provenance=provenance,
    ).moved(TrailStep.JUDGE, None, why)


def needs_judge_grade(
    submission: Submission, question: Question, rubric: Rubric, signals: AnswerSignals | None
) -> Grade:
    """A subjective answer with no judge configured: no score, and why."""
    return Grade(
        **identity(submission),
        status=GradeStatus.NEEDS_JUDGE,
        score=None,
        max_score=rubric.points,
        method=Method.NONE,
        review_reasons=[
            ReviewReason(
                code=ReviewCode.NEEDS_JUDGE,
                message=f"{question.type} questions need the LLM judge; none is configured",
            ),
            *duplicate_reasons(signals),
            *off_topic_reasons(signals),
        ],
        signals=signals,
        provenance=GradeProvenance(engine=ENGINE),
    ).moved(TrailStep.RULE, None, "no judge is configured: no score")


def zero_by_rule(
    submission: Submission,
    rubric: Rubric,
    rationale: str,
    reasons: list[ReviewReason],
    confidence: float,
    signals: AnswerSignals | None = None,
    embed_model: str | None = None,
    *,
    needs_review: bool = False,
) -> Grade:
    """A 0 decided by rule, without the judge: every criterion 0 for ``rationale``."""
    return Grade(
        **identity(submission),
        status=GradeStatus.GRADED,
        score=0.0,
        max_score=rubric.points,
        method=Method.RULE,
        criteria=[
            CriterionScore(id=c.id, points=0.0, max_points=c.points, rationale=rationale)
            for c in rubric.criteria
        ],
        confidence=confidence,
        needs_review=needs_review,
        review_reasons=reasons,
        signals=signals,
        provenance=rule_provenance(rubric, embed_model if signals is not None else None),
    ).moved(TrailStep.RULE, None, reasons[0].message if reasons else rationale)


def injection_only_grade(submission: Submission, rubric: Rubric, flagged: Flagged) -> Grade:
    """0 by rule for an answer that is only an injection attempt, and to review."""
    grade = zero_by_rule(
        submission, rubric, "only an injection attempt", [injection_reason(flagged.findings)],
        0.9, needs_review=True,
    )  # fmt: skip
    injection = InjectionReading(raw_score=None, cleaned_score=0.0, kept=AnswerVariant.CLEANED)
    return grade.model_copy(
        update={"details": grade.details.model_copy(update={"injection": injection})}
    )
