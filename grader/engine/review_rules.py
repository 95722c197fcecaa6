"""Review flags that mean something: copies that are copies, confidence that predicts errors.

Pure functions, measured on ADS development data by ``scorer_review.py``:

- ``is_copy``: e5 cosines of answers to one question are compressed (two differently worded
  answers to "can the bottom of a stack be deleted" sat at 0.973), so a near-duplicate must
  also share its wording: most of the shorter answer's character 3-grams, not counting those
  of the question, must occur in the other.
- ``confidence``: the chance that the scorer's grade is within a quarter of the points, from
  a logistic model over a few uncertainty signals (fit by ``fit_confidence``; its coefficients
  travel with the scorer file).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from grader.engine.scorer_model import AnswerFeatures, Confidence, Scorer
from grader.text import content_chars, match_key

# Chosen on ADS development pairs (docs/research/benchmarks-log.md, "Review flags").
COPY_MIN_COSINE = 0.97
COPY_MIN_CONTAINMENT = 0.5
# shorter answers are too generic to call copies (SignalSettings.duplicate_min_chars)
COPY_MIN_CHARS = 20


def char_ngrams(text: str, n: int = 3) -> set[str]:
    """Character n-grams of the match key's letters, digits and CJK (punctuation dropped)."""
    key = "".join(ch for ch in match_key(text) if ch.isalnum())
    if len(key) < n:
        return {key} if key else set()
    return {key[i : i + n] for i in range(len(key) - n + 1)}


def containment(a: str, b: str, question: str = "") -> float:
    """Share of the shorter answer's 3-grams found in the other, leaving out the question's
    own 3-grams (two answers that restate the question share them without copying)."""
    asked = char_ngrams(question) if question else set()
    first, second = char_ngrams(a) - asked, char_ngrams(b) - asked
    smaller = min(len(first), len(second))
    return len(first & second) / smaller if smaller else 0.0


def jaccard(a: str, b: str) -> float:
    """3-gram Jaccard: shared over all; low when one answer extends the other."""
    first, second = char_ngrams(a), char_ngrams(b)
    union = first | second
    return len(first & second) / len(union) if union else 1.0


def is_copy(
    cosine: float,
    a: str,
    b: str,
    question: str = "",
    *,
    min_cosine: float = COPY_MIN_COSINE,
    min_containment: float = COPY_MIN_CONTAINMENT,
    min_chars: int = COPY_MIN_CHARS,
) -> bool:
    """Near-duplicate: close in meaning, long enough, and most of the shorter answer's wording
    (beyond the question's) is in the other."""
    if cosine < min_cosine or min(content_chars(a), content_chars(b)) < min_chars:
        return False
    return containment(a, b, question) >= min_containment


# --- confidence ------------------------------------------------------------------------------

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
