"""The scorer's confidence: the chance its grade is within a quarter of the points.

A logistic model over a few uncertainty signals of one graded answer (``uncertainty_signals``),
fit by ``grader.calibrate.scorer_fit``; its coefficients travel with the scorer file. Measured on
ADS development data by ``benchmarks/scorer_review.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from grader.engine.scoring.scorer_model import AnswerFeatures, Confidence, Scorer

UNCERTAINTY = (
    "middle",  # share·(1 − share): grades between 0 and full marks are where graders differ
    "coverage_gap",  # |semantic − n-gram coverage|: the two coverage signals disagree
    "novelty",  # largest |z| of the answer's features: far from the answers the scorer saw
    "knn_spread",  # the nearest graded answers disagree with each other
    "neighbour_gap",  # |final share − nearest graded answers' share|
    "correction",  # |knn_residual|: how far the neighbours moved the signals' share
    "distance",  # 1 − cosine of the nearest graded answer
    "judge_entropy",  # how spread the judge's label distributions were
    "judge_gap",  # |final share − the judge's share|
)


def uncertainty_signals(
    share: float, features: AnswerFeatures, scorer: Scorer
) -> dict[str, float | None]:
    """The inputs of ``confidence`` for one graded answer; the neighbour ones are None when
    the question has no graded answers, the judge's when the judge gave no reading.
    ``scorer`` is the ridge first-stage scorer (its standardisation tells how unusual the
    answer's features are)."""
    z = (features.vector(scorer.features) - np.asarray(scorer.mean)) / np.asarray(scorer.scale)
    knn_share, nearest = features.knn_share, features.knn_top_similarity  # set together
    return {
        "middle": share * (1 - share),
        "coverage_gap": abs((features.semantic_coverage or 0) - (features.ngram_coverage or 0)),
        "novelty": float(np.abs(z).max()),
        "knn_spread": features.knn_spread,
        "neighbour_gap": None if knn_share is None else abs(share - knn_share),
        "correction": None if features.knn_residual is None else abs(features.knn_residual),
        "distance": None if knn_share is None or nearest is None else 1 - nearest,
        "judge_entropy": features.judge_entropy,
        "judge_gap": None if features.judge_share is None else abs(share - features.judge_share),
    }


def confidence(model: Confidence, x: np.ndarray | Sequence[float]) -> np.ndarray:
    """P(within a quarter of the points) for the rows of ``x`` (columns in model order)."""
    z = (np.atleast_2d(x) - np.asarray(model.mean)) / np.asarray(model.scale)
    logit = z @ np.asarray(model.coef) + model.intercept
    probability: np.ndarray = 1 / (1 + np.exp(-logit))
    return probability


def review_threshold(scores: np.ndarray, rate: float) -> float:
    """The confidence below which ``rate`` of these answers go to review."""
    if not 0 < rate < 1:
        raise ValueError(f"review rate must be between 0 and 1, got {rate}")
    return float(np.quantile(np.asarray(scores, dtype=float), rate))


def caught(errors: np.ndarray, uncertainty: np.ndarray, rate: float) -> float:
    """Share of the large errors among the ``rate`` most uncertain answers."""
    errors = np.asarray(errors, dtype=bool)
    if not errors.any():
        return math.nan
    take = max(1, round(rate * len(errors)))
    order = np.argsort(-np.asarray(uncertainty, dtype=float), kind="stable")[:take]
    return float(errors[order].sum() / errors.sum())
