"""What the cohort z-score (``cohort_reference_z``) is worth: development data only (issue 27).

The z-score places an answer's reference margin among the other answers to its question in
the same run, so a grade depends on who shares the run. Three designs, each cross-validated by
the production procedure (``grader.calibrate.scorer_cv.cv_grades``, GroupKFold(5) by question,
copy rule and bands included) on the development parts (Mohler dev half, ADS dev part):

- ``shipped``: the design shipped until issue 27 (``WITH_Z``), the z-score read wherever a
  question has 5 answers;
- ``dropped, no refit``: the shipped design's scorers, but no answer has the z-score (what the
  pipeline gives when the z-score is dropped and the scorer file is left as it is: the
  scorers that need it are skipped, English answers lose the judge's scorer);
- ``dropped, refit``: the shipped design without the z-score, refit (the judge's scorer for
  English answers kept, on the signals without the z-score).

    python -m benchmarks.scorer_cohort --out benchmarks/results/scorer_cohort.json --bootstrap 200
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

from threadpoolctl import threadpool_limits

from benchmarks.common import code_version
from benchmarks.scorer_data import load_table
from benchmarks.scorer_designs import figures_of
from benchmarks.scorer_dev import _counts
from grader.calibrate.scorer_cv import cv_grades
from grader.calibrate.scorer_fit import (
    EXPLAINABLE,
    SETTINGS,
    STAGE1,
    ScorerDesign,
    fit_stages,
    with_judge,
)
from grader.calibrate.scorer_rows import ScorerRow

# The design shipped before issue 27 (the z-score first), and the same without it (shipped since).
WITH_Z = with_judge(
    ScorerDesign(stage1=(("signals+cohort", (*EXPLAINABLE, "cohort_reference_z")), *STAGE1)),
    languages=("en",),
)
WITHOUT_Z = with_judge(ScorerDesign(stage1=STAGE1), languages=("en",))


def without_z(row: ScorerRow) -> ScorerRow:
    """The row as the pipeline would give it with the cohort z-score dropped."""
    features = row.features.model_copy(update={"cohort_reference_z": None})
    return row.model_copy(update={"features": features})


def run(rows: list[ScorerRow], grade_rows: list[ScorerRow], design: ScorerDesign, bootstrap: int):
    """Per setting: who decided and the figures per data set, grading ``grade_rows`` with
    scorers fit on the matching ``rows``."""
    originals = {r.id: r for r in rows}
    graded = cv_grades(
        grade_rows, lambda train: fit_stages([originals[r.id] for r in train], design), SETTINGS
    )
    out = {}
    for setting in SETTINGS:
        found = [g for g in graded if g.setting == setting]
        human = [g.row.share * g.row.points for g in found]
        out[setting] = {
            "decided_by": _counts(g.decided for g in found),
            "scorer": figures_of(
                [g.row.dataset for g in found],
                human,
                [g.share * g.row.points for g in found],
                [g.row.points for g in found],
                bootstrap,
            ),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    threadpool_limits(1)
    rows = [r for r in load_table() if r.part == "dev"]
    stripped = [without_z(r) for r in rows]
    result = {
        "benchmark": "scorer_cohort",
        "code": code_version("grader", "benchmarks/*.py"),
        "split": "development parts only (benchmarks/splits.py)",
        "folds": "GroupKFold(5) by question",
        "designs": {
            "shipped": run(rows, rows, WITH_Z, args.bootstrap),
            "dropped, no refit": run(rows, stripped, WITH_Z, args.bootstrap),
            "dropped, refit": run(stripped, stripped, WITHOUT_Z, args.bootstrap),
        },
    }
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")
    for name, figures in result["designs"].items():
        for setting, found in figures.items():
            cells = ", ".join(
                f"{d} r {v['pearson']['value']} MAE {v['mae']['value']} (n {v['n']})"
                for d, v in found["scorer"].items()
            )
            print(f"{name:18} {setting:10} {cells}")


if __name__ == "__main__":
    main()
