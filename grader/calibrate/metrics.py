"""Agreement between two graders on one point scale, with bootstrap 95 % intervals.

Point estimates come from scikit-learn and SciPy. Conventions:

- QWK (quadratic weighted kappa) is computed on the integer labels ``0..ceil(max_score)``;
  fractional scores are rounded half up (2.5 -> 3) first, so Mohler's averaged scores and
  half-point criteria land on the nearest whole point.
- Exact agreement compares the raw scores (2.5 equals 2.5 only); adjacent means within one
  point. Mean difference is judge minus human: positive means the judge is more lenient.
- A figure that is undefined (a correlation when one side gives every answer the same score,
  kappa when both do, anything on no answers) is ``None`` with a note saying why, never 0.

Intervals are percentile bootstrap intervals from resampling answers (rows, paired) with a
fixed seed. The replicates are computed for all resamples at once: scipy's ``pearsonr`` with an
axis, Spearman as Pearson of ``rankdata`` ranks, and QWK by its closed form
``2·cov / (var_h + var_j + (mean_h − mean_j)²)`` (population moments), which equals
``cohen_kappa_score(weights="quadratic")`` on integer labels exactly; calling scikit-learn once
per resample costs about 2 ms, minutes for an 80-question exam.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy import stats
from sklearn.metrics import cohen_kappa_score, mean_absolute_error

CONFIDENCE = 0.95
_CHUNK_CELLS = 2_000_000  # resampled scores held in memory at once


class Estimate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: float | None
    low: float | None = None
    high: float | None = None


class Agreement(BaseModel):
    """How closely the judge matches the instructor on one set of answers."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(description="Answers scored by both.")
    max_score: float = Field(description="The point scale: 0 to max_score.")
    qwk: Estimate
    pearson: Estimate
    spearman: Estimate
    mae: Estimate = Field(description="Mean absolute difference, in points.")
    exact: Estimate = Field(description="Share of answers with exactly the same score.")
    adjacent: Estimate = Field(description="Share within one point.")
    mean_difference: Estimate = Field(description="Judge minus human; > 0: judge more lenient.")
    notes: list[str] = Field(default_factory=list)


# The figures of an Agreement as reports and tables show them, in that order.
METRIC_LABELS = (
    ("qwk", "QWK"),
    ("pearson", "Pearson"),
    ("spearman", "Spearman"),
    ("mae", "MAE"),
    ("exact", "exact"),
    ("adjacent", "±1"),
    ("mean_difference", "judge − human"),
)


def to_labels(scores: np.ndarray) -> np.ndarray:
    """Integer labels for kappa: round half up (2.5 -> 3), not numpy's half-to-even."""
    return np.floor(np.asarray(scores, dtype=float) + 0.5).astype(int)


def agreement(
    human: Sequence[float],
    judge: Sequence[float],
    max_score: float,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
) -> Agreement:
    """All agreement figures for paired scores; ``bootstrap=0`` skips the intervals."""
    h = np.asarray(human, dtype=float)
    j = np.asarray(judge, dtype=float)
    if h.shape != j.shape or h.ndim != 1:
        raise ValueError("human and judge scores must be two lists of the same length")
    notes: list[str] = []
    values = _point_estimates(h, j, max_score, notes)
    intervals = _bootstrap(h, j, bootstrap, seed) if bootstrap and len(h) >= 2 else {}
    if bootstrap and len(h) == 1:
        notes.append("one answer: no interval")
    estimates = {}
    for name, value in values.items():
        low, high = intervals.get(name, (None, None)) if value is not None else (None, None)
        estimates[name] = Estimate(value=value, low=low, high=high)
    return Agreement(n=len(h), max_score=max_score, notes=notes, **estimates)


def _point_estimates(
    h: np.ndarray, j: np.ndarray, max_score: float, notes: list[str]
) -> dict[str, float | None]:
    names = ("qwk", "pearson", "spearman", "mae", "exact", "adjacent", "mean_difference")
    if len(h) == 0:
        notes.append("no answer scored by both")
        return dict.fromkeys(names)
    diff = j - h
    values: dict[str, float | None] = {
        "qwk": _qwk(h, j, max_score, notes),
        "pearson": None,
        "spearman": None,
        "mae": float(mean_absolute_error(h, j)),
        "exact": float(np.mean(np.isclose(diff, 0, rtol=0, atol=1e-9))),
        "adjacent": float(np.mean(np.abs(diff) <= 1 + 1e-9)),
        "mean_difference": float(np.mean(diff)),
    }
    if len(h) < 2:
        notes.append("one answer: correlations undefined")
    elif np.ptp(h) == 0 or np.ptp(j) == 0:
        side = (
            "both graders give"
            if np.ptp(h) == np.ptp(j) == 0
            else ("the instructor gives" if np.ptp(h) == 0 else "the judge gives")
        )
        notes.append(f"{side} every answer the same score: correlations undefined")
    else:
        values["pearson"] = float(stats.pearsonr(h, j).statistic)
        values["spearman"] = float(stats.spearmanr(h, j).statistic)
    return values


def _qwk(h: np.ndarray, j: np.ndarray, max_score: float, notes: list[str]) -> float | None:
    if len(h) < 2:
        notes.append("one answer: kappa undefined")
        return None
    hl, jl = to_labels(h), to_labels(j)
    if np.ptp(hl) == 0 and np.ptp(jl) == 0 and hl[0] == jl[0]:
        notes.append("every answer has the same whole-point score from both: kappa undefined")
        return None
    labels = np.arange(0, math.ceil(max_score) + 1)
    return float(cohen_kappa_score(hl, jl, labels=labels, weights="quadratic"))


def _bootstrap(
    h: np.ndarray, j: np.ndarray, resamples: int, seed: int
) -> dict[str, tuple[float | None, float | None]]:
    rng = np.random.default_rng(seed)
    n = len(h)
    chunk = max(1, _CHUNK_CELLS // n)
    replicates: dict[str, list[np.ndarray]] = {}
    for start in range(0, resamples, chunk):
        rows = rng.integers(0, n, size=(min(chunk, resamples - start), n))
        for name, values in _replicates(h[rows], j[rows]).items():
            replicates.setdefault(name, []).append(values)
    alpha = (1 - CONFIDENCE) / 2
    intervals: dict[str, tuple[float | None, float | None]] = {}
    for name, parts in replicates.items():
        values = np.concatenate(parts)
        values = values[np.isfinite(values)]
        # Most resamples undefined (e.g. nearly constant scores): no honest interval.
        if len(values) < resamples / 2:
            intervals[name] = (None, None)
            continue
        low, high = np.quantile(values, [alpha, 1 - alpha])
        intervals[name] = (float(low), float(high))
    return intervals


def _replicates(h: np.ndarray, j: np.ndarray) -> dict[str, np.ndarray]:
    """Every figure for each resample (one per row); NaN where undefined."""
    diff = j - h
    hl, jl = to_labels(h).astype(float), to_labels(j).astype(float)
    mh, mj = hl.mean(axis=1), jl.mean(axis=1)
    cov = ((hl - mh[:, None]) * (jl - mj[:, None])).mean(axis=1)
    denominator = hl.var(axis=1) + jl.var(axis=1) + (mh - mj) ** 2
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        qwk = np.where(denominator > 0, 2 * cov / np.where(denominator > 0, denominator, 1), np.nan)
        pearson = stats.pearsonr(h, j, axis=1).statistic
        spearman = stats.pearsonr(
            stats.rankdata(h, axis=1), stats.rankdata(j, axis=1), axis=1
        ).statistic
    return {
        "qwk": qwk,
        "pearson": np.asarray(pearson, dtype=float),
        "spearman": np.asarray(spearman, dtype=float),
        "mae": np.abs(diff).mean(axis=1),
        "exact": np.isclose(diff, 0, rtol=0, atol=1e-9).mean(axis=1),
        "adjacent": (np.abs(diff) <= 1 + 1e-9).mean(axis=1),
        "mean_difference": diff.mean(axis=1),
    }
