"""Cross-validated predictions of the scorer designs ``scorer_dev.py`` compares (dev only).

GroupKFold(5) by question: a question's answers are never on both sides of a fold. Designs:
isotonic on one feature, ridge on standardised features, gradient boosting on the same; with
graded answers one stage (neighbour features beside the signals) or two (the signals share
corrected by the neighbours' residuals, nested so the signals scorer never saw the validation
questions); the neighbour rule alone. The shipped design is cross-validated by production's
own procedure instead (``grader.calibrate.scorer_cv.cv_grades``, in ``scorer_dev.py``).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import pearsonr
from sklearn.ensemble import HistGradientBoostingRegressor

from benchmarks.scorer_data import COHORT, RESIDUALS, SIGNALS, SIGNALS_PORTABLE, Rows, dev_rows
from grader.calibrate.metrics import agreement
from grader.calibrate.scorer_cv import question_split
from grader.calibrate.scorer_fit import EXPLAINABLE, fit_isotonic, fit_ridge
from grader.calibrate.scorer_rows import ScorerRow, copies
from grader.engine.scoring.scorer_core.rules import copied_share
from grader.engine.scoring.scorer_model import predict

KS = (1, 3, 5, 10)
TEMPERATURES = (0.01, 0.02, 0.05, None)  # None: cosine above the unrelated zero
SCOPES = {"mohler": ("mohler",), "ads": ("ads",), "both": ("mohler", "ads")}


def signal_set(scope: str) -> tuple[str, ...]:
    """Stage 1: per data set the plain signals; across both, the explainable set with the
    cohort z-score (the shipped one)."""
    return (*EXPLAINABLE, *COHORT) if scope == "both" else SIGNALS


def fit_predict(kind: str, x_train, y_train, x_test, names) -> np.ndarray:
    """One model fit on the training rows, shares for the test rows."""
    if kind == "ridge":
        return predict(fit_ridge(x_train, y_train, names), x_test)
    if kind == "isotonic":
        return predict(fit_isotonic(x_train[:, 0], y_train, names[0]), x_test)
    model = HistGradientBoostingRegressor(
        max_iter=200, learning_rate=0.05, max_leaf_nodes=15, min_samples_leaf=20,
        l2_regularization=1.0, random_state=0,
    )  # fmt: skip
    return np.clip(model.fit(x_train, y_train).predict(x_test), 0.0, 1.0)


def cv_predict(rows: Rows, names: tuple[str, ...], kind: str) -> np.ndarray:
    """Out-of-fold shares, folds by question, fit on the rows production's scorer grades
    (rule rows get a share too: they can be graded neighbours). Rows lacking a feature get
    the signals-only ridge of the same fold, as production's fallback would."""
    x = rows.matrix(names)
    scored = np.array([r.rule is None for r in rows.rows])
    complete = ~np.isnan(x).any(axis=1)
    out = np.empty(len(x))
    for train, test in question_split(rows.groups):
        usable = train[complete[train] & scored[train]]
        ok, missing = test[complete[test]], test[~complete[test]]
        out[ok] = fit_predict(kind, x[usable], rows.share[usable], x[ok], list(names))
        if len(missing):
            base = tuple(n for n in names if n in SIGNALS) or SIGNALS_PORTABLE
            xb = rows.matrix(base)
            fit_on = train[scored[train]]
            out[missing] = fit_predict("ridge", xb[fit_on], rows.share[fit_on], xb[missing], base)
    return out


def cv_two_stage(
    table: list[ScorerRow], scope: str, setting: str, stage2: tuple[str, ...], kind: str
) -> tuple[Rows, np.ndarray]:
    """Out-of-fold shares of a two-stage scorer (``kind`` 'rule': base + knn_residual).

    Per outer fold: the signals scorer's shares for the training questions come from an inner
    GroupKFold over them, for the validation questions from a signals scorer fit on all
    training questions (as the shipped scorer meets a new exam); the residual features
    follow, then stage 2 is fit on the training questions. No neighbour: the base share.
    """
    datasets, names = SCOPES[scope], signal_set(scope)
    everyone = dev_rows(table, datasets, "none", scored_only=False)
    ids = np.array([r.id for r in everyone.rows])
    scored = np.array([r.rule is None for r in everyone.rows])
    evaluated = dev_rows(table, datasets, setting)
    for name in RESIDUALS:  # filled per fold below: what the validation answers were shown
        evaluated.columns[name] = np.full(len(evaluated.rows), np.nan)
    out = np.full(len(evaluated.rows), np.nan)
    for train, test in question_split(everyone.groups):
        inner = everyone.select(np.isin(np.arange(len(ids)), train))
        base = dict(zip(ids[train], cv_predict(inner, names, "ridge"), strict=True))
        x = everyone.matrix(names)
        fit_on = train[scored[train]]
        fitted = fit_ridge(x[fit_on], everyone.share[fit_on], names)
        base |= dict(zip(ids[test], predict(fitted, x[test]), strict=True))
        rows = dev_rows(table, datasets, setting, base=base)
        training = np.isin(rows.groups, everyone.groups[train])
        z = rows.matrix(stage2)
        complete = ~np.isnan(z).any(axis=1)
        fit_rows, val = training & complete, ~training & complete
        if kind == "rule":
            out[val] = np.clip(
                rows.columns["base_share"][val] + rows.columns["knn_residual"][val], 0, 1
            )
        else:
            out[val] = fit_predict(kind, z[fit_rows], rows.share[fit_rows], z[val], list(stage2))
        fallback = ~training & ~complete
        out[fallback] = rows.columns["base_share"][fallback]
        for name in RESIDUALS:
            evaluated.columns[name][~training] = rows.columns[name][~training]
    return evaluated, out


def with_copy_rule(rows: Rows, shares: np.ndarray, table: list[ScorerRow]) -> np.ndarray:
    """An answer whose exact text (match key) was graded takes those grades' mean."""
    by_id = {r.id: r.share for r in table}
    out = shares.copy()
    for n, row in enumerate(rows.rows):
        found = copies(row, rows.setting, by_id)
        if found:
            out[n] = copied_share(found)
    return out


def figures(rows: Rows, shares: np.ndarray, bootstrap: int) -> dict[str, dict]:
    """Pearson, MAE (points) and the rest, per data set among the rows."""
    return figures_of(rows.dataset, rows.share * rows.max_score, shares * rows.max_score,
                      rows.max_score, bootstrap)  # fmt: skip


def figures_of(dataset, human, predicted, points, bootstrap: int) -> dict[str, dict]:
    out = {}
    for name in sorted(set(dataset)):
        mask = np.asarray(dataset) == name
        a = agreement(np.asarray(human)[mask], np.asarray(predicted)[mask],
                      float(np.asarray(points)[mask][0]), bootstrap=bootstrap)  # fmt: skip
        out[name] = {
            "n": a.n,
            **{m: _est(getattr(a, m)) for m in ("pearson", "mae", "qwk", "spearman", "exact")},
        }
    return out


def _est(e) -> dict:
    return {k: None if v is None else round(v, 4) for k, v in e.model_dump().items()}


def single_features(rows: Rows, names: tuple[str, ...]) -> list[dict]:
    """Each feature alone: raw Pearson with the human share, and isotonic under the CV."""
    out = []
    for name in names:
        values = rows.columns[name]
        ok = ~np.isnan(values)
        raw = float(pearsonr(values[ok], rows.share[ok]).statistic)
        shares = cv_predict(rows, (name,), "isotonic")
        out.append({"feature": name, "raw_pearson": round(raw, 4),
                    "isotonic_cv": figures(rows, shares, 0)})  # fmt: skip
    return out


def neighbour_grid(table: list[ScorerRow], dataset: str, setting: str) -> list[dict]:
    """The weighted share of the k nearest graded answers as the score itself (nothing fit)."""
    out = []
    by_id = {r.id: r.share for r in table}
    for k in KS:
        for t in TEMPERATURES:
            rows = dev_rows(table, (dataset,), setting, k=k, temperature=t or 0.02)
            share = rows.columns["knn_share"] if t else _margin_share(rows, k, by_id)
            ok = ~np.isnan(share)
            pts = rows.max_score[ok]
            out.append({
                "k": k, "weights": f"softmax T={t}" if t else "cosine above zero",
                "n": int(ok.sum()),
                "pearson": round(float(pearsonr(share[ok], rows.share[ok]).statistic), 4),
                "mae": round(float(np.mean(np.abs(share[ok] - rows.share[ok]) * pts)), 4),
            })  # fmt: skip
    return out


def _margin_share(rows: Rows, k: int, by_id: dict[str, float]) -> np.ndarray:
    """Weights = cosine minus the unrelated zero of the answer's reference (≥ 1e-6)."""
    out = np.full(len(rows.rows), np.nan)
    for n, row in enumerate(rows.rows):
        found = row.neighbours[rows.setting]
        if not found.sims:
            continue
        sims = np.array(found.sims[:k])
        shares = np.array([by_id[i] for i in found.ids[:k]])
        f = row.features
        zero = (f.reference_cosine or 0.0) - (f.reference_margin or 0.0)
        weights = np.maximum(sims - zero, 1e-6)
        out[n] = float(weights @ shares / weights.sum())
    return out
