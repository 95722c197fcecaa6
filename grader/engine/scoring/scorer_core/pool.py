"""A question's graded answers as the scorer leans on them, and an answer read against them.

``GradedPool`` holds the human-scored answers of one question (their vectors, human shares,
first-stage shares and match keys); ``read_answer`` turns an answer's own features into the
scorer's ``ScorerInput``: the neighbour features from the graded answers the neighbour rule
allows, and the copies of its text. Grading, re-scoring and an instructor's refit read
answers here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from grader.engine.scoring.features import answer_features
from grader.engine.scoring.scorer_core.inputs import Copy, ScorerInput
from grader.engine.scoring.scorer_core.rules import copy_share, graded_split
from grader.engine.scoring.scorer_model import AnswerFeatures, ScorerSet, neighbour_features
from grader.engine.scoring.wording import WordingModel
from grader.models import AnswerSignals, GradedAnswer, Question, Rubric
from grader.text import match_key

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class GradedPool:
    """A question's human-scored answers as the scorer sees them: their vectors, their human
    share of the points, the first-stage scorer's share for each, and their match keys."""

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
            if any(s.serves(plain) for s in scorer.first_stage):
                kept.append(g)
                base.append(scorer.base(plain)[1])
        width = len(next(iter(vectors.values()))) if vectors else 0
        return cls(
            answers=kept,
            vectors=np.array([vectors[g.id] for g in kept]) if vectors and kept
            else np.zeros((len(kept), width)),
            shares=np.array([copy_share(g.score, points) for g in kept]),
            base=np.array(base),
            keys=[match_key(g.answer) for g in kept],
            language=next((f.language for _, f in graded), None),
        )  # fmt: skip

    @property
    def has_vectors(self) -> bool:
        return self.vectors.ndim == 2 and self.vectors.shape[1] > 0

    def split(self, submission_id: str, answer: str) -> tuple[np.ndarray, np.ndarray]:
        """(may be a neighbour, is a copy) over the pool's answers (``rules.graded_split``)."""
        return graded_split(
            submission_id, match_key(answer), [g.id for g in self.answers], self.keys
        )

    def copies(self, submission_id: str, answer: str) -> list[GradedAnswer]:
        """Graded answers with the same text (another student's copy, a textbook sentence)."""
        copied = self.split(submission_id, answer)[1]
        return [g for g, c in zip(self.answers, copied, strict=True) if c]

    def neighbours(
        self, submission_id: str, answer: str, vector: np.ndarray
    ) -> tuple[dict[str, float | None], list[tuple[GradedAnswer, float]]]:
        """The neighbour features of one answer, and the graded answers nearest to it with
        their cosines (nearest first): never the answer itself or a copy of its text."""
        import numpy as np

        keep = self.split(submission_id, answer)[0]
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


def read_answer(
    features: AnswerFeatures,
    points: float,
    pool: GradedPool | None,
    submission_id: str,
    answer: str | None,
    vector: np.ndarray | None,
) -> ScorerInput:
    """The answer as the scorer reads it: ``features`` (its own) with the neighbour ones, and
    the copies and nearest graded answers, when the pool and the answer's text (copies) and
    vector (neighbours) are known; ``points``: the question's, for the copies' shares."""
    if pool is None or not pool.answers or answer is None:
        return ScorerInput(features)
    copies = tuple(
        Copy(g.id, copy_share(g.score, points), g.score) for g in pool.copies(submission_id, answer)
    )
    if vector is None or not pool.has_vectors:
        return ScorerInput(features, copies)
    nearby, nearest = pool.neighbours(submission_id, answer, vector)
    return ScorerInput(features.model_copy(update=nearby), copies, tuple(nearest))
