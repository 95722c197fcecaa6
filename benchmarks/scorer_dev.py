"""Which features and which model turn the signals into one score: development data only.

Reads the feature table of ``scorer_features.py`` and, per setting (no graded answers of the
question; 5 or 10 graded per question; every other development answer graded) and per data
set (Mohler dev, ADS dev, and one model across both), compares by cross-validation,
GroupKFold(5) by question (a question's answers are never on both sides of a fold):

- each feature alone: its raw Pearson, and an isotonic curve fit on the other folds;
- isotonic on the best single feature, ridge on standardised features, gradient boosting
  (scikit-learn's HistGradientBoostingRegressor) on the same features;
- with graded answers, one stage (the neighbour features beside the signals) against two
  stages: the signals scorer's share, corrected by how far the human marks of the nearest
  graded answers sit from the signals scorer's share for them (nested: the signals scorer
  never saw the validation questions, not even through the training rows' residuals);
- the neighbour rule alone: k nearest graded answers (k = 1, 3, 5, 10) weighted by softmax
  of cosine / T, or by cosine above the unrelated zero, taken as the score.

Predictions are shares of the maximum, times the question's points; Pearson and MAE are in
points, with bootstrap intervals (answers resampled) for the model rows. Then it fits the
proposed default scorers on all development rows and writes them as a scorer file.

    python benchmarks/scorer_dev.py --out benchmarks/results/scorer_dev.json \\
        --scorer-out benchmarks/results/scorer_default_dev.json
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
from common import code_version
from scipy.stats import pearsonr
from scorer_data import (
    COHORT,
    EXPLAINABLE,
    KNN,
    RESIDUALS,
    SETTINGS,
    SIGNALS,
    SIGNALS_PORTABLE,
    Rows,
    dev_rows,
    load_table,
)
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.model_selection import GroupKFold
from threadpoolctl import threadpool_limits

from grader.calibrate.metrics import agreement
from grader.calibrate.scorer_fit import fit_isotonic, fit_ridge
from grader.engine.scorer import ScorerSet, predict, to_json

FOLDS = 5
KS = (1, 3, 5, 10)
TEMPERATURES = (0.01, 0.02, 0.05, None)  # None: cosine above the unrelated zero
SCOPES = {"mohler": ("mohler",), "ads": ("ads",), "both": ("mohler", "ads")}


def signal_set(scope: str) -> tuple[str, ...]:
    """Stage 1: per data set the plain signals; across both, without the raw cosine (its
    scale differs between languages), with the cohort z-score of the reference margin, and
    without the features that took negative weights (the explainable set)."""
    return (*EXPLAINABLE, "cohort_reference_z") if scope == "both" else SIGNALS


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
    """Out-of-fold shares, folds by question. Rows lacking a feature (no eligible neighbour)
    get the signals-only ridge of the same fold, as production's fallback would."""
    x = rows.matrix(names)
    complete = ~np.isnan(x).any(axis=1)
    out = np.empty(len(x))
    splits = min(FOLDS, len(set(rows.groups)))
    for train, test in GroupKFold(n_splits=splits).split(x, rows.share, rows.groups):
        usable = train[complete[train]]
        ok, missing = test[complete[test]], test[~complete[test]]
        out[ok] = fit_predict(kind, x[usable], rows.share[usable], x[ok], list(names))
        if len(missing):
            base = tuple(n for n in names if n in SIGNALS) or SIGNALS_PORTABLE
            xb = rows.matrix(base)
            out[missing] = fit_predict("ridge", xb[train], rows.share[train], xb[missing], base)
    return out


def cv_two_stage(
    table: list[dict], scope: str, setting: str, stage2: tuple[str, ...], kind: str
) -> tuple[Rows, np.ndarray]:
    """Out-of-fold shares of the two-stage scorer (``kind`` 'rule': base + knn_residual).

    Per outer fold: the signals scorer's shares for the training questions come from an inner
    GroupKFold over them, for the validation questions from a signals scorer fit on all
    training questions (as the shipped scorer meets a new exam); the residual features
    follow, then stage 2 is fit on the training questions. No neighbour: the base share.
    """
    datasets, names = SCOPES[scope], signal_set(scope)
    everyone = dev_rows(table, datasets, "none")
    ids = np.array([r["id"] for r in everyone.rows])
    evaluated = dev_rows(table, datasets, setting)
    for name in RESIDUALS:  # filled per fold below: what the validation answers were shown
        evaluated.columns[name] = np.full(len(evaluated.rows), np.nan)
    out = np.full(len(evaluated.rows), np.nan)
    for train, test in GroupKFold(n_splits=FOLDS).split(ids, everyone.share, everyone.groups):
        inner = everyone.select(np.isin(np.arange(len(ids)), train))
        base = dict(zip(ids[train], cv_predict(inner, names, "ridge"), strict=True))
        x = everyone.matrix(names)
        fitted = fit_ridge(x[train], everyone.share[train], names)
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


def with_copy_rule(rows: Rows, shares: np.ndarray, table: list[dict]) -> np.ndarray:
    """An answer whose exact text (match key) was graded takes those grades' mean."""
    by_id = {r["id"]: r["share"] for r in table}
    out = shares.copy()
    for n, row in enumerate(rows.rows):
        copies = row["neighbours"][rows.setting]["identical"]
        if copies:
            out[n] = float(np.mean([by_id[i] for i in copies]))
    return out


def figures(rows: Rows, shares: np.ndarray, bootstrap: int) -> dict[str, dict]:
    """Pearson, MAE (points) and the rest, per data set among the rows."""
    out = {}
    for name in sorted(set(rows.dataset)):
        mask = rows.dataset == name
        points = rows.max_score[mask]
        a = agreement(rows.share[mask] * points, shares[mask] * points, float(points[0]),
                      bootstrap=bootstrap)  # fmt: skip
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


def neighbour_grid(table: list[dict], dataset: str, setting: str) -> list[dict]:
    """The weighted share of the k nearest graded answers as the score itself (nothing fit)."""
    out = []
    by_id = {r["id"]: r["share"] for r in table}
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
    """Weights = cosine minus the unrelated zero of the answer's best reference (≥ 1e-6)."""
    out = np.full(len(rows.rows), np.nan)
    for n, row in enumerate(rows.rows):
        found = row["neighbours"][rows.setting]
        if not found["sims"]:
            continue
        sims = np.array(found["sims"][:k])
        shares = np.array([by_id[i] for i in found["ids"][:k]])
        zero = row["features"]["reference_cosine"] - row["features"]["reference_margin"]
        weights = np.maximum(sims - zero, 1e-6)
        out[n] = float(weights @ shares / weights.sum())
    return out


def compare(table: list[dict], setting: str, scope: str, bootstrap: int) -> dict:
    """Singles, isotonic on the best single, ridge and boosting; with graded answers also
    one stage against two."""
    rows = dev_rows(table, SCOPES[scope], setting)
    names = signal_set(scope) + ((*KNN, "knn_spread") if setting != "none" else ())
    if scope != "both":
        names = SIGNALS + COHORT + names[len(SIGNALS) :]
    singles = single_features(rows, names)
    best = min(singles, key=lambda s: np.mean([d["mae"]["value"]
                                              for d in s["isotonic_cv"].values()]))  # fmt: skip
    runs = [("isotonic", best["feature"], (best["feature"],))]
    label = "signals" if scope != "both" else "explainable signals+cohort"
    runs += [(k, label, signal_set(scope)) for k in ("ridge", "hgb")]
    if scope != "both":
        runs += [("ridge", "signals+cohort", SIGNALS + COHORT)]
    else:
        runs += [("ridge", "explainable signals", EXPLAINABLE),
                 ("ridge", "portable signals", SIGNALS_PORTABLE),
                 ("ridge", "portable signals+cohort", SIGNALS_PORTABLE + COHORT),
                 ("ridge", "portable signals+cohort+reference_cosine", SIGNALS + COHORT)]  # fmt: skip
    if setting != "none":
        runs += [(k, "signals+knn (one stage)", signal_set(scope) + KNN) for k in ("ridge", "hgb")]
    models = [{"model": kind, "set": label, "features": list(chosen),
               "cv": figures(rows, cv_predict(rows, chosen, kind), bootstrap)}
              for kind, label, chosen in runs]  # fmt: skip
    if setting != "none":
        for kind, stage2 in (("rule", ("base_share", "knn_residual")), ("ridge", RESIDUALS),
                             ("hgb", RESIDUALS + KNN[:2])):  # fmt: skip
            evaluated, shares = cv_two_stage(table, scope, setting, stage2, kind)
            label = "two stages: " + (
                "signals + knn_residual" if kind == "rule" else "+".join(stage2)
            )
            models.append({"model": kind, "set": label, "features": list(stage2),
                           "cv": figures(evaluated, shares, bootstrap)})  # fmt: skip
            if kind == "ridge":
                models.append({"model": kind, "set": label + ", copy rule", "features": list(stage2),
                               "cv": figures(evaluated, with_copy_rule(evaluated, shares, table),
                                             bootstrap)})  # fmt: skip
    return {"n": len(rows.rows), "questions": len(set(rows.groups)),
            "singles": singles, "models": models}  # fmt: skip


def default_scorers(table: list[dict]) -> ScorerSet:
    """The proposal: one model across both data sets, every development row. Stage 1 with
    the cohort z-scores, then without (a question with too few answers for a cohort); stage
    2 per band of graded answers (5+ from the 5-graded setting, 10+ from the 10-graded one,
    20+ from 'all other answers graded'), its residuals from out-of-fold signals shares, as
    in the cross-validation."""
    everyone = dev_rows(table, SCOPES["both"], "none")
    signals = []
    for name, chosen in (("signals+cohort", signal_set("both")), ("signals", EXPLAINABLE)):
        scorer = fit_ridge(everyone.matrix(chosen), everyone.share, chosen)
        scorer.name = name
        scorer.trained_on = _trained_on(everyone, "none")
        signals.append(scorer)
    ids = [r["id"] for r in everyone.rows]
    base = dict(zip(ids, cv_predict(everyone, signal_set("both"), "ridge"), strict=True))
    graded = []
    for setting, band in (("all_other", 20), ("graded10", 10), ("graded5", 5)):
        rows = dev_rows(table, SCOPES["both"], setting, base=base)
        z = rows.matrix(RESIDUALS)
        ok = ~np.isnan(z).any(axis=1)
        scorer = fit_ridge(z[ok], rows.share[ok], RESIDUALS)
        scorer.name, scorer.min_graded = f"graded{band}+", band
        scorer.trained_on = _trained_on(rows.select(ok), setting)
        graded.append(scorer)
    return ScorerSet(signals=signals, graded=graded)


def _trained_on(rows: Rows, setting: str) -> dict:
    return {"data": "Mohler dev + ADS dev (benchmarks/splits.py)", "setting": setting,
            "answers": len(rows.rows), "questions": len(set(rows.groups))}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON results")
    parser.add_argument("--scorer-out", type=Path, help="the proposed default scorer file")
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    threadpool_limits(1)  # boosting's OpenMP threads spin on a shared 2-core machine

    table = load_table()
    result: dict = {"benchmark": "scorer_dev", "code": code_version("grader", "benchmarks/*.py", "benchmarks/labels"),
                    "split": "development parts only (benchmarks/splits.py)",
                    "folds": f"GroupKFold({FOLDS}) by question", "settings": {},
                    "neighbour_grid": {}}  # fmt: skip
    for setting in SETTINGS:
        result["settings"][setting] = {}
        for scope in SCOPES:
            print(f"{setting} {scope}", flush=True)
            result["settings"][setting][scope] = compare(table, setting, scope, args.bootstrap)
        if setting != "none":
            result["neighbour_grid"][setting] = {
                d: neighbour_grid(table, d, setting) for d in ("mohler", "ads")
            }
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.scorer_out:
        args.scorer_out.write_text(to_json(default_scorers(table)), encoding="utf-8")


if __name__ == "__main__":
    main()
