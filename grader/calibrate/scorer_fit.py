"""Fitting the scorer's models on human grades (scikit-learn), for the shipped default and for
an instructor's refit (``grader calibrate fit``).

The engine only reads the fitted numbers (``grader.engine.scorer``); fitting lives here, on
the calibration floor, with the other code that learns from an instructor's scores.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grader.engine.scorer import Confidence, Scorer


def fit_ridge(
    x: np.ndarray, y: np.ndarray, features: Sequence[str], *, alpha: float = 1.0
) -> Scorer:
    """Least squares with an L2 penalty on standardised features (scikit-learn's Ridge)."""
    from sklearn.linear_model import Ridge

    x = np.asarray(x, dtype=float)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0  # a constant feature contributes nothing, instead of dividing by 0
    model = Ridge(alpha=alpha).fit((x - mean) / scale, np.asarray(y, dtype=float))
    return Scorer(
        kind="ridge",
        features=list(features),
        mean=mean.tolist(),
        scale=scale.tolist(),
        coef=model.coef_.tolist(),
        intercept=float(model.intercept_),
    )


def fit_isotonic(x: np.ndarray, y: np.ndarray, feature: str) -> Scorer:
    """A monotone step-and-ramp curve from one feature to the share (scikit-learn's Isotonic)."""
    from sklearn.isotonic import IsotonicRegression

    values = np.asarray(x, dtype=float).reshape(-1)
    model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(values, y)
    return Scorer(
        kind="isotonic",
        features=[feature],
        x=model.X_thresholds_.tolist(),
        y=model.y_thresholds_.tolist(),
    )


def fit_confidence(x: np.ndarray, within: np.ndarray, features: Sequence[str]) -> Confidence:
    """Fit on the signals of answers with cross-validated grades and whether each was within
    a quarter of the points (``within``: 1 or 0)."""
    from sklearn.linear_model import LogisticRegression

    x = np.asarray(x, dtype=float)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=1.0).fit((x - mean) / scale, np.asarray(within, dtype=int))
    return Confidence(
        features=list(features),
        mean=mean.tolist(),
        scale=scale.tolist(),
        coef=model.coef_[0].tolist(),
        intercept=float(model.intercept_[0]),
    )
