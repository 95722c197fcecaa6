"""Does the judge's reading add to the scorer? The design without the judge against the same
design with the judge's reading in stage 1 (``scorer_fit.with_judge``): for every language
(``judge_all``) and for English answers only (``judge_en``), on the answers the judge read.

The table is ``scorer_features.py``'s, built with ``--judge vllm`` (the judge's readings of a
seeded sample per question, ``scorer_judge.py``). Development: each design's production
procedure cross-validated (``scorer_dev.shipped_cv``, GroupKFold by question). Test part:
each design fit on every development row (as ``fit_default`` fits the shipped file, without
the confidence models), then every test row the judge read graded in each setting as
``scorer_core.rules.decide`` grades it; figures per data set with 95 % bootstrap intervals, and the
paired difference of each judge design's Pearson and the signals design's, with an interval
from resampling questions.

    python -m benchmarks.scorer_with_judge --table benchmarks/results/scorer_features.jsonl.gz \
        --out benchmarks/results/scorer_with_judge.json
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.common import code_version, paired_pearson_difference
from benchmarks.scorer_designs import figures_of
from benchmarks.scorer_dev import shipped_cv
from grader.calibrate.scorer_cv import Graded, grade_rows
from grader.calibrate.scorer_fit import ScorerDesign, fit_stages, with_judge
from grader.calibrate.scorer_rows import read_rows

RESAMPLES = 2000
TEST_SETTINGS = ("none", "graded5", "graded10")  # all_other is a development-only setting
SIGNALS = "signals"  # the design without the judge (shipped until 2026-12-04)
DESIGNS = {
    SIGNALS: ScorerDesign(),
    "judge_all": with_judge(ScorerDesign()),
    "judge_en": with_judge(ScorerDesign(), languages=("en",)),  # shipped (SHIPPED)
}


def graded_test_rows(table, design: ScorerDesign) -> dict[tuple[str, str], Graded]:
    """Every judged test row, graded in each setting by ``design`` fit on development rows
    (a row's graded neighbours are answers of its question, so each question is graded whole)."""
    scorer = fit_stages([r for r in table if r.part == "dev"], design)
    by_question = defaultdict(list)
    for row in table:
        if row.part == "test":
            by_question[row.question].append(row)
    out = {}
    for rows in by_question.values():
        if not any(r.judge is not None for r in rows):
            continue
        for graded in grade_rows(rows, scorer, TEST_SETTINGS):
            if graded.row.judge is not None:
                out[(graded.row.id, graded.setting)] = graded
    return out


def compare(graded: dict[str, dict], setting: str, seed: int = 0) -> dict:
    """Every design's figures on the same judged rows, and each judge design's paired
    Pearson difference from the signals design (``SIGNALS``)."""
    base = graded[SIGNALS]
    keys = sorted(k for k in base if k[1] == setting)
    rows = [base[k].row for k in keys]
    human = np.array([r.share * r.points for r in rows])
    points = np.array([r.points for r in rows])
    datasets = [r.dataset for r in rows]
    questions = np.array([r.question for r in rows])
    points_of = {name: np.array([g[k].share for k in keys]) * points for name, g in graded.items()}
    out: dict = {name: figures_of(datasets, human, p, points, RESAMPLES)
                 for name, p in points_of.items()}  # fmt: skip
    for name in [n for n in graded if n != SIGNALS]:
        for dataset in sorted(set(datasets)):
            mask = np.array([d == dataset for d in datasets])
            out.setdefault("difference", {}).setdefault(name, {})[dataset] = (
                paired_pearson_difference(
                    human[mask], points_of[SIGNALS][mask], points_of[name][mask],
                    questions[mask], RESAMPLES, seed,
                )
            )  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, required=True, help="a table built with --judge vllm")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    threadpool_limits(1)
    table = read_rows(args.table)
    result = {
        "benchmark": "scorer_with_judge",
        "code": code_version("grader", "benchmarks/*.py"),
        "table": str(args.table),
        "judge_rows": {
            f"{dataset} {part}": sum(
                r.judge is not None for r in table if r.part == part and r.dataset == dataset
            )
            for dataset in sorted({r.dataset for r in table})
            for part in ("dev", "test")
        },
        "designs": {name: repr(design) for name, design in DESIGNS.items()},
        "dev_cv": {name: shipped_cv(table, design, RESAMPLES) for name, design in DESIGNS.items()},
    }
    graded = {name: graded_test_rows(table, design) for name, design in DESIGNS.items()}
    result["test"] = {s: compare(graded, s) for s in TEST_SETTINGS}
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for setting in TEST_SETTINGS:
        found = result["test"][setting]
        for name, by_dataset in found.get("difference", {}).items():
            for dataset, d in by_dataset.items():
                a = found[SIGNALS][dataset]["pearson"]["value"]
                b = found[name][dataset]["pearson"]["value"]
                print(f"test {setting} {dataset}: {SIGNALS} {a}, {name} {b}, difference "
                      f"{d['difference']} {d['interval_95']} (n {d['n']})")  # fmt: skip


if __name__ == "__main__":
    main()
