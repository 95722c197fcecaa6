"""The scorer's inputs for one answer, from what the pipeline already computed.

The embedding signals (reference margin and its z-score among the question's answers,
semantic key-point coverage, topic margin), the n-gram coverage, the answer's length against
the reference, the judge's share and uncertainty when it ran, and — when the question has
human-scored answers — what the nearest of them say (``neighbour_features``). The benchmarks
compute the default scorer's training table through these same functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grader.engine.coverage import coverage_points
from grader.engine.scorer import AnswerFeatures, ScorerSet, neighbour_features
from grader.models import AnswerSignals, Grade, GradedAnswer, Question, Rubric
from grader.text import content_chars, match_key

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class JudgeReading:
    """What the judge said, as a share of the points, and how unsure it was (0..1)."""

    share: float
    entropy: float | None


def judge_reading(grade: Grade) -> JudgeReading | None:
    """The judge's own score on a judged grade: the label distributions' expected points in
    the probability mode (with their mean entropy), the verdict's points otherwise."""
    if grade.score is None or not grade.max_score:
        return None
    details = grade.details
    if details.get("judge_mode") == "probability":
        checks = details.get("checks") or []
        total = sum(details.get("judge_points", {}).values())
        entropy = sum(c["entropy"] for c in checks) / len(checks) if checks else None
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
        semantic_coverage=signals.coverage_points / rubric.points,
        ngram_coverage=coverage_points(rubric, answer) / rubric.points,
        length_log_ratio=(
            math.log((1 + content_chars(answer)) / (1 + content_chars(reference)))
            if reference
            else None
        ),
        cohort_reference_z=signals.reference_z,
        judge_share=judge.share if judge else None,
        judge_entropy=judge.entropy if judge else None,
    )


@dataclass(frozen=True)
class GradedPool:
    """A question's human-scored answers as the scorer sees them: their vectors, their human
    share of the points, the signals scorer's share for each, and their match keys."""

    answers: list[GradedAnswer]
    vectors: np.ndarray
    shares: np.ndarray
    base: np.ndarray
    keys: list[str]

    @classmethod
    def build(
        cls,
        question: Question,
        rubric: Rubric,
        graded: Sequence[tuple[GradedAnswer, AnswerSignals]],
        vectors: dict[str, np.ndarray],
        scorer: ScorerSet,
    ) -> GradedPool:
        import numpy as np

        answers = [g for g, _ in graded]
        base = [scorer.base(answer_features(question, rubric, g.answer, s))[1] for g, s in graded]
        return cls(
            answers=answers,
            vectors=np.array([vectors[g.id] for g in answers]) if answers else np.zeros((0, 0)),
            shares=np.array([min(1.0, g.score / rubric.points) for g in answers]),
            base=np.array(base),
            keys=[match_key(g.answer) for g in answers],
        )

    def copies(self, submission_id: str, answer: str) -> list[GradedAnswer]:
        """Graded answers with the same text (another student's copy, a textbook sentence)."""
        key = match_key(answer)
        return [g for g, k in zip(self.answers, self.keys, strict=True)
                if k == key and g.id != submission_id]  # fmt: skip

    def neighbours(
        self, submission_id: str, answer: str, vector: np.ndarray
    ) -> tuple[dict[str, float | None], list[tuple[GradedAnswer, float]]]:
        """The neighbour features of one answer, and the graded answers nearest to it with
        their cosines (nearest first): never the answer itself or a copy of its text."""
        import numpy as np

        key = match_key(answer)
        keep = np.array(
            [
                g.id != submission_id and k != key
                for g, k in zip(self.answers, self.keys, strict=True)
            ],
            dtype=bool,
        )
        similarities = self.vectors[keep] @ vector if keep.any() else np.zeros(0)
        features = neighbour_features(similarities, self.shares[keep], self.base[keep])
        kept = [g for g, k in zip(self.answers, keep, strict=True) if k]
        order = np.argsort(-similarities, kind="stable")
        nearest = [(kept[i], float(similarities[i])) for i in order]
        return features, nearest
