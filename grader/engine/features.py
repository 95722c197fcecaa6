"""The scorer's inputs for one answer, from what the pipeline already computed.

The embedding signals (reference margin and its z-score among the question's answers,
semantic key-point coverage, topic margin), the n-gram coverage, the answer's length against
the reference, the judge's share and uncertainty when it ran, and — when the question has
human-scored answers — what the nearest of them say (``neighbour_features``) and what their
wording says (``grader.engine.wording``). The benchmarks compute the default scorer's training
table through these same functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from grader.engine.coverage import coverage_points
from grader.engine.scorer import AnswerFeatures, ScorerSet, neighbour_features
from grader.engine.wording import WordingModel
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
        peer_margin=signals.peer_margin,
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
        language=question.language,
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
    language: str | None = None

    @classmethod
    def build(
        cls,
        question: Question,
        rubric: Rubric,
        graded: Sequence[tuple[GradedAnswer, AnswerSignals]],
        vectors: dict[str, np.ndarray],
        scorer: ScorerSet,
    ) -> GradedPool:
        read = [(g, answer_features(question, rubric, g.answer, s)) for g, s in graded]
        return cls.from_features(rubric.points, read, vectors, scorer)

    @classmethod
    def from_features(
        cls,
        points: float,
        graded: Sequence[tuple[GradedAnswer, AnswerFeatures]],
        vectors: dict[str, np.ndarray] | None,
        scorer: ScorerSet,
    ) -> GradedPool:
        """The pool from the graded answers' own features (a grade's stored ones, when
        re-scoring). They are read without the judge, as the pipeline reads them: it never
        judged them. Without ``vectors`` the pool finds copies, not neighbours. Graded answers
        none of the scorer's first stage can read are left out."""
        import numpy as np

        bare = {"judge_share": None, "judge_entropy": None}
        kept, base = [], []
        for g, features in graded:
            plain = features.model_copy(update=bare)
            if any(s.serves(plain) for s in scorer.signals):
                kept.append(g)
                base.append(scorer.base(plain)[1])
        width = len(next(iter(vectors.values()))) if vectors else 0
        return cls(
            answers=kept,
            vectors=np.array([vectors[g.id] for g in kept]) if vectors and kept
            else np.zeros((len(kept), width)),
            shares=np.array([min(1.0, g.score / points) for g in kept]),
            base=np.array(base),
            keys=[match_key(g.answer) for g in kept],
            language=next((f.language for _, f in graded), None),
        )  # fmt: skip

    @property
    def has_vectors(self) -> bool:
        return self.vectors.ndim == 2 and self.vectors.shape[1] > 0

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
        features["wording_residual"] = self.wording_residual(keep, answer)
        kept = [g for g, k in zip(self.answers, keep, strict=True) if k]
        order = np.argsort(-similarities, kind="stable")
        nearest = [(kept[i], float(similarities[i])) for i in order]
        return features, nearest

    @cached_property
    def wording(self) -> WordingModel | None:
        """The wording model of every graded answer, fit once per pool."""
        return WordingModel.fit(
            [g.answer for g in self.answers], (self.shares - self.base).tolist(), self.language
        )

    def wording_residual(self, keep: np.ndarray, answer: str) -> float | None:
        """What the wording of the ``keep`` graded answers predicts for ``answer``: the whole
        pool's model, or one without the answer's own copies when it has some."""
        if keep.all():
            model = self.wording
        else:
            model = WordingModel.fit(
                [g.answer for g, k in zip(self.answers, keep, strict=True) if k],
                (self.shares - self.base)[keep].tolist(),
                self.language,
            )
        return None if model is None else float(model.predict([answer])[0])
