"""Does the judge's reading add to the scorer? The shipped design against the same design with
the judge's reading in stage 1 (``scorer_fit.with_judge``), on the answers the judge read.

The table is ``scorer_features.py``'s, built with ``--judge vllm`` (the judge's readings of a
seeded sample per question, ``scorer_judge.py``). Development: both designs' production
procedure cross-validated (``scorer_dev.shipped_cv``, GroupKFold by question). Test part:
both designs fit on every development row (as ``fit_default`` fits the shipped file, without
the confidence models), then every test row the judge read graded in each setting as
``scoring.decide`` grades it; figures per data set with 95 % bootstrap intervals, and the
paired difference of the two designs' Pearsons with an interval from resampling questions.

    python benchmarks/scorer_with_judge.py --table T.jsonl.gz --out benchmarks/results/scorer_with_judge.json
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
from common import code_version, paired_pearson_difference
from scorer_designs import figures_of
from scorer_dev import shipped_cv
from threadpoolctl import threadpool_limits

from grader.calibrate.scorer_cv import Graded, grade_rows
from grader.calibrate.scorer_fit import SHIPPED, Design, fit_stages, with_judge
from grader.calibrate.scorer_rows import read_rows

RESAMPLES = 2000
TEST_SETTINGS = ("none", "graded5", "graded10")  # all_other is a development-only setting


def graded_test_rows(table, design: Design) -> dict[tuple[str, str], Graded]:
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


def compare(shipped: dict, judged: dict, setting: str, seed: int = 0) -> dict:
    keys = sorted(k for k in shipped if k[1] == setting and k in judged)
    rows = [shipped[k].row for k in keys]
    human = np.array([r.share * r.points for r in rows])
    points = np.array([r.points for r in rows])
    a = np.array([shipped[k].share for k in keys]) * points
    b = np.array([judged[k].share for k in keys]) * points
    datasets = [r.dataset for r in rows]
    out = {
        "shipped": figures_of(datasets, human, a, points, RESAMPLES),
        "with_judge": figures_of(datasets, human, b, points, RESAMPLES),
    }
    for name in sorted(set(datasets)):
        mask = np.array([d == name for d in datasets])
        questions = np.array([r.question for r in rows])[mask]
        out.setdefault("difference", {})[name] = paired_pearson_difference(
            human[mask], a[mask], b[mask], questions, RESAMPLES, seed
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, required=True, help="a table built with --judge vllm")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    threadpool_limits(1)
    table = read_rows(args.table)
    judged_design = with_judge(SHIPPED)
    result = {
        "benchmark": "scorer_with_judge",
        "code": code_version("grader", "benchmarks/*.py"),
        "table": str(args.table),
        "judge_rows": {
            part: sum(r.judge is not None for r in table if r.part == part)
            for part in ("dev", "test")
        },
        "dev_cv": {
            "shipped": shipped_cv(table, SHIPPED, RESAMPLES),
            "with_judge": shipped_cv(table, judged_design, RESAMPLES),
        },
    }
    shipped, judged = graded_test_rows(table, SHIPPED), graded_test_rows(table, judged_design)
    result["test"] = {s: compare(shipped, judged, s) for s in TEST_SETTINGS}
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for setting in TEST_SETTINGS:
        for name, d in result["test"][setting].get("difference", {}).items():
            a = result["test"][setting]["shipped"][name]["pearson"]["value"]
            b = result["test"][setting]["with_judge"][name]["pearson"]["value"]
            print(f"test {setting} {name}: shipped {a}, with the judge {b}, difference "
                  f"{d['difference']} {d['interval_95']} (n {d['n']})")  # fmt: skip


if __name__ == "__main__":
    main()
