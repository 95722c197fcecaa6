"""Which features and which model turn the signals into one score: development data only.

Reads the feature table of ``scorer_features.py`` (production's features) and, per setting
(no graded answers of the question; 5 or 10 graded per question; every other development
answer graded) and per data set (Mohler dev, ADS dev, and one model across both), compares
designs by cross-validation, GroupKFold(5) by question (``scorer_designs.py``): each feature
alone, isotonic, ridge, gradient boosting, one stage against two, the neighbour rule alone.
Only answers production's scorer grades count (a rule scores blank and off-topic ones 0).

The shipped design is then cross-validated by the production procedure itself
(``grader.calibrate.scorer_cv.cv_grades`` over ``fit_stages``: per fold both stages fit on the
other questions, every answer graded as ``grader.engine.scoring.scorer_grade.decide`` grades it, copy rule
and bands included), and ``--scorer-out`` writes ``fit_default`` on every development row:

    python -m benchmarks.scorer_dev --out benchmarks/results/scorer_dev.json \\
        --scorer-out grader/engine/scoring/scorer_default.json
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.common import code_version
from benchmarks.scorer_data import (
    COHORT,
    JUDGE,
    KNN,
    RESIDUALS,
    SETTINGS,
    SIGNALS,
    SIGNALS_PORTABLE,
    dev_rows,
    load_table,
)
from benchmarks.scorer_designs import (
    SCOPES,
    cv_predict,
    cv_two_stage,
    figures,
    figures_of,
    neighbour_grid,
    signal_set,
    single_features,
    with_copy_rule,
)
from grader.calibrate.scorer_cv import cv_grades
from grader.calibrate.scorer_fit import (
    EXPLAINABLE,
    SHIPPED,
    ScorerDesign,
    fit_default,
    fit_ridge,
    fit_stages,
    with_judge,
)
from grader.calibrate.scorer_fit import SETTINGS as FIT_SETTINGS
from grader.calibrate.scorer_rows import ScorerRow
from grader.engine.scoring.scorer_model import to_json


def runs_for(setting: str, scope: str, best: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(model, label, features) of every one-stage design tried in this setting and scope."""
    runs = [("isotonic", best, (best,))]
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
    return runs


def compare(table: list[ScorerRow], setting: str, scope: str, bootstrap: int) -> dict:
    """Singles, isotonic on the best single, ridge and boosting; with graded answers also
    one stage against two."""
    rows = dev_rows(table, SCOPES[scope], setting)
    names = signal_set(scope) + ((*KNN, "knn_spread") if setting != "none" else ())
    if scope != "both":
        names = SIGNALS + COHORT + names[len(SIGNALS) :]
    singles = single_features(rows, names)
    best = min(singles, key=lambda s: np.mean([d["mae"]["value"]
                                              for d in s["isotonic_cv"].values()]))  # fmt: skip
    models = [{"model": kind, "set": label, "features": list(chosen),
               "cv": figures(rows, cv_predict(rows, chosen, kind), bootstrap)}
              for kind, label, chosen in runs_for(setting, scope, best["feature"])]  # fmt: skip
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


def judge_designs(table: list[ScorerRow], bootstrap: int) -> dict:
    """On the development answers the judge read (a seeded sample per question): the judge
    alone, stage 1 without and with its reading, CV by question; the judge's own grade."""
    rows = dev_rows(table, SCOPES["both"], "none", judged=True)
    if not rows.rows:
        return {}
    names = signal_set("both")
    runs = [("isotonic", "judge_share alone", ("judge_share",)),
            ("ridge", "explainable signals+cohort", names),
            ("ridge", "explainable signals+cohort + judge_share", (*names, "judge_share")),
            ("ridge", "explainable signals+cohort + judge_share + judge_entropy", (*names, *JUDGE)),
            ("hgb", "explainable signals+cohort + judge_share + judge_entropy", (*names, *JUDGE))]  # fmt: skip
    models = []
    for kind, label, chosen in runs:
        found = {"model": kind, "set": label, "features": list(chosen),
                 "cv": figures(rows, cv_predict(rows, chosen, kind), bootstrap)}  # fmt: skip
        if kind == "ridge":
            fitted = fit_ridge(rows.matrix(chosen), rows.share, chosen)
            found["coef"] = dict(zip(chosen, (round(c, 4) for c in fitted.coef), strict=True))
        models.append(found)
    judge_grade = np.array([r.judge.score / r.points if r.judge and r.judge.score is not None
                            else np.nan for r in rows.rows])  # fmt: skip
    ok = ~np.isnan(judge_grade)
    return {"n": len(rows.rows), "questions": len(set(rows.groups)), "models": models,
            "singles": single_features(rows, JUDGE),
            "judge_grade": figures(rows.select(ok), judge_grade[ok], bootstrap)}  # fmt: skip


def shipped_cv(table: list[ScorerRow], design: ScorerDesign, bootstrap: int) -> dict:
    """The production procedure, cross-validated: per setting, the final grades (copy rule,
    bands) against the signals scorer alone on the same answers, per data set."""
    rows = [r for r in table if r.part == "dev"]
    graded = cv_grades(rows, lambda train: fit_stages(train, design), FIT_SETTINGS)
    alone = {g.row.id: g.share for g in graded if g.setting == "none"}
    out = {}
    judged = {g.row.id for g in graded if g.row.judge is not None}
    for setting in (*FIT_SETTINGS, *(f"{s}, judged answers" for s in FIT_SETTINGS if judged)):
        base, _, only = setting.partition(", ")
        found = [g for g in graded if g.setting == base and (not only or g.row.id in judged)]
        datasets = [g.row.dataset for g in found]
        human = [g.row.share * g.row.points for g in found]
        points = [g.row.points for g in found]
        out[setting] = {
            "decided_by": _counts(g.decided for g in found),
            "scorer": figures_of(datasets, human, [g.share * g.row.points for g in found],
                                 points, bootstrap),
            "signals_alone": figures_of(datasets, human,
                                        [alone[g.row.id] * g.row.points for g in found],
                                        points, bootstrap),
        }  # fmt: skip
    return out


def _counts(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results (omit: only --scorer-out)")
    parser.add_argument("--scorer-out", type=Path, help="write the default scorer file here")
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    threadpool_limits(1)  # boosting's OpenMP threads spin on a shared 2-core machine

    table = load_table()
    design = SHIPPED
    if args.out:
        result: dict = {"benchmark": "scorer_dev",
                        "code": code_version("grader", "benchmarks/*.py", "benchmarks/labels"),
                        "split": "development parts only (benchmarks/splits.py)",
                        "folds": "GroupKFold(5) by question", "settings": {},
                        "neighbour_grid": {}, "judge_rows": sum(r.judge is not None for r in table
                                                                if r.part == "dev")}  # fmt: skip
        for setting in SETTINGS:
            result["settings"][setting] = {}
            for scope in SCOPES:
                print(f"{setting} {scope}", flush=True)
                result["settings"][setting][scope] = compare(table, setting, scope, args.bootstrap)
            if setting != "none":
                result["neighbour_grid"][setting] = {
                    d: neighbour_grid(table, d, setting) for d in ("mohler", "ads")
                }
        print("judge designs; shipped designs, production procedure", flush=True)
        result["judge_designs"] = judge_designs(table, args.bootstrap)
        result["shipped"] = {"design": _design(design),
                             "cv": shipped_cv(table, design, args.bootstrap)}  # fmt: skip
        if result["judge_rows"]:
            other = ScorerDesign() if design != ScorerDesign() else with_judge(ScorerDesign())
            result["alternative"] = {"design": _design(other),
                                     "cv": shipped_cv(table, other, args.bootstrap)}  # fmt: skip
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")
    if args.scorer_out:
        rows = [r for r in table if r.part == "dev"]
        args.scorer_out.write_text(to_json(fit_default(rows, design)), encoding="utf-8")


def _design(design: ScorerDesign) -> dict:
    return {"stage1": [list(s) for s in design.stage1],
            "bands": [[setting, band, list(names)] for setting, band, names in design.bands],
            "languages": [[name, list(found)] for name, found in design.languages]}  # fmt: skip


if __name__ == "__main__":
    main()
