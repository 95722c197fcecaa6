"""The judge's budget: which answers get the criterion checks, where the CPU time goes.

With embeddings and a calibrated scorer, the scorer decides the score, and it weighs the
judge's reading only in the languages its file was fit on (``ScorerSet.weighs_judge``:
English today, where the reading lifts Pearson on Mohler test answers from 0.47 to 0.54; on
Chinese answers the embedded 1.5B reads at 0.04–0.11 and the shipped scorer ignores it). On
an answer in another language the checks cost most of the CPU time and buy only the
per-criterion split and the evidence, which the engine already has without a model. So the
``budget`` plan (the default) asks no criterion check there: the scorer's grade is split over
the criteria by their key-point coverage (``coverage_grade``) and each criterion shows the
answer's own closest span as evidence, as the probability mode does; ``details.split`` says
so. ``full`` asks every check of every answer, as before. Without a scorer or embeddings the
judge's points are the grade, so every plan asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from grader.config import JudgeSettings, ReviewSettings, Settings
from grader.engine.judging.evidence import closest_evidence
from grader.engine.judging.feedback import judge_feedback, missing_criteria, template_feedback
from grader.engine.judging.provenance import rule_provenance
from grader.engine.judging.reasons import duplicate_reasons, off_topic_reasons, rubric_reasons
from grader.engine.judging.rule_grades import identity
from grader.engine.signals.coverage import rubric_coverage
from grader.judge import served
from grader.judge.base import Judge
from grader.models import (
    AnswerSignals,
    CriterionScore,
    Grade,
    GradeDetails,
    GradeStatus,
    Method,
    Question,
    Rubric,
    Submission,
    TrailStep,
)

COVERAGE_SPLIT: Literal["coverage"] = (
    "coverage"  # ``details.split``: criteria split by coverage, no judge read it
)


def with_default_plan(settings: Settings) -> Settings:
    """``settings`` with the judge's plan decided: as set (``GRADER_JUDGE_PLAN``), else
    ``full`` for a served judge (a server, or vLLM on a GPU: it reads every criterion and its
    readings count as far as its model is trusted, ``scoring.judge_trust``) and ``budget`` for
    the embedded one on a CPU."""
    if "plan" in settings.judge.model_fields_set:
        return settings
    plan = "full" if served(settings) else "budget"
    return settings.model_copy(update={"judge": settings.judge.model_copy(update={"plan": plan})})


def split_by_coverage(grade: Grade) -> bool:
    """Whether the grade's criteria were split by coverage because no judge read the answer."""
    return grade.details.split == COVERAGE_SPLIT


def coverage_grade(
    submission: Submission,
    question: Question,
    rubric: Rubric,
    signals: AnswerSignals | None,
    embed_model: str | None,
    judge: JudgeSettings,
    review: ReviewSettings,
) -> Grade:
    """The grade the scorer starts from when no judge read the answer: each criterion's points
    in proportion to its coverage (its share of the split, until the scorer sets the total),
    the answer's closest span as evidence, and the review reasons that need no judge."""
    answer = submission.answer
    shares = criterion_shares(rubric, answer, signals)
    zh = question.language == "zh"
    criteria = [
        CriterionScore(
            id=c.id,
            points=round(c.points * shares[c.id], 2),
            max_points=c.points,
            evidence=closest_evidence(c, answer, signals),
            rationale=(
                f"要点覆盖 {shares[c.id]:.0%}" if zh else f"key-point coverage {shares[c.id]:.0%}"
            ),
        )
        for c in rubric.criteria
    ]
    missing = missing_criteria(rubric, criteria)
    reasons = [
        *duplicate_reasons(signals),
        *off_topic_reasons(signals),
        *rubric_reasons(question, rubric, review.derived),
    ]
    provenance = rule_provenance(rubric, embed_model).model_copy(
        update={"judge_plan": judge.plan, "judge_checks": 0, "rubric_reviewed": rubric.reviewed}
    )
    return Grade(
        **identity(submission),
        status=GradeStatus.GRADED,
        score=round(sum(c.points for c in criteria), 2),
        max_score=rubric.points,
        method=Method.JUDGE,  # a model's grade (the scorer's), ranked for review as one
        criteria=criteria,
        feedback=template_feedback(question.language, missing),
        confidence=None,
        needs_review=bool(reasons),
        review_reasons=reasons,
        details=GradeDetails(
            judge_plan=judge.plan,
            split=COVERAGE_SPLIT,
            coverage={cid: round(share, 3) for cid, share in shares.items()},
            missing=missing,
        ),
        signals=signals,
        provenance=provenance,
    ).moved(
        TrailStep.COVERAGE,
        None,
        "no judge read the answer: each criterion's share of its key points, by wording and "
        "meaning",
    )


def criterion_shares(
    rubric: Rubric, answer: str, signals: AnswerSignals | None
) -> dict[str, float]:
    """Each criterion's coverage, 0..1: its key points' wording in the answer (n-grams), and
    with embeddings the mean of that and their meaning (wording and meaning fail on different
    answers, as in ``model_free_points``)."""
    wording = rubric_coverage(rubric, answer)
    if signals is None:
        return wording
    meaning: dict[str, list[float]] = {}
    for match in signals.key_points:
        meaning.setdefault(match.criterion, []).append(match.coverage)
    return {
        cid: (share + sum(meaning[cid]) / len(meaning[cid])) / 2 if meaning.get(cid) else share
        for cid, share in wording.items()
    }


def write_feedback(
    judge: Judge, items: Mapping[int, tuple[Question, Rubric, str, Grade]]
) -> dict[int, str]:
    """``GRADER_FEEDBACK=judge`` for answers no judge scored: one written sentence each, from
    the scorer's grade (its score and missing criteria), by item; a failed sentence is left
    out (the template's stays)."""
    order = [i for i, (*_, grade) in items.items() if grade.score is not None]
    requests = []
    for i in order:
        question, rubric, answer, grade = items[i]
        missing = missing_criteria(rubric, grade.criteria)
        requests.append((question, rubric, answer, grade.score or 0.0, missing))
    sentences = judge_feedback(judge, requests)
    return {i: sentence for i, sentence in zip(order, sentences, strict=True) if sentence}
