"""The scorer's inputs for one answer, from what the pipeline already computed.

The embedding signals (reference margin, semantic key-point coverage, topic margin; none of
them reads the other answers of the run, so a score never depends on who shared it), the
n-gram coverage, the answer's length against
the reference, the judge's share and uncertainty when it ran, and — when the question has
human-scored answers — what the nearest of them say and what their wording says
(``grader.engine.scoring.scorer_core.pool``). The benchmarks compute the default scorer's training
table through these same functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grader.engine.judging.budget import split_by_coverage
from grader.engine.scoring.scorer_model import AnswerFeatures
from grader.engine.signals.coverage import coverage_points
from grader.models import AnswerSignals, Grade, JudgeModeName, Question, Rubric
from grader.text import content_chars


@dataclass(frozen=True)
class JudgeReading:
    """What the judge said, as a share of the points, and how unsure it was (0..1)."""

    share: float
    entropy: float | None


def judge_reading(grade: Grade) -> JudgeReading | None:
    """The judge's own score on a judged grade: the label distributions' expected points in
    the probability mode (with their mean entropy), the verdict's points otherwise."""
    if grade.score is None or not grade.max_score or split_by_coverage(grade):
        return None  # no score, or no judge read the answer (``judging.budget``)
    details = grade.details
    if details.judge_mode == JudgeModeName.PROBABILITY:
        checks = details.checks or []
        total = sum((details.judge_points or {}).values())
        entropy = sum(c.entropy for c in checks) / len(checks) if checks else None
        return JudgeReading(total / grade.max_score, entropy)
    return JudgeReading(grade.score / grade.max_score, None)


def answer_features(
    question: Question,
    rubric: Rubric,
    answer: str,
    signals: AnswerSignals,
    judge: JudgeReading | None = None,
) -> AnswerFeatures:
    """Every feature of the answer that needs no graded answer."""
    reference = question.answer if isinstance(question.answer, str) and question.answer else None
    return AnswerFeatures(
        reference_cosine=signals.reference_similarity,
        reference_margin=signals.reference_margin,
        topic_margin=signals.topic_margin,
        peer_margin=signals.peer_margin,
        semantic_coverage=signals.coverage_points / rubric.points,
        ngram_coverage=coverage_points(rubric, answer) / rubric.points,
        length_log_ratio=(
            math.log((1 + content_chars(answer)) / (1 + content_chars(reference)))
            if reference
            else None
        ),
        judge_share=judge.share if judge else None,
        judge_entropy=judge.entropy if judge else None,
        language=question.language,
    )
