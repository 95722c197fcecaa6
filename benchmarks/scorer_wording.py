"""Issue 13: does the wording of a question's graded answers help the second stage?
Development CV only (``scorer_dev.shipped_cv``: the production procedure, GroupKFold(5) by
question, both stages refit per fold).

``grader.engine.scoring.wording``: a ridge over TF-IDF character n-grams of the question's graded
answers, fit on their residuals (human − signals scorer), predicts the new answer's residual
(``wording_residual``). Designs: *shipped* (E5, shipped when the rule was written);
*wording20*, the band with at least 20 graded answers (fit on "all other development answers
graded") also reads it; *wording10*, the bands from 10 graded answers on read it.

The decision rule, written before these designs' figures were computed. A probe on the same
development answers, outside the production procedure (``scorer_wording_probe.py grid``),
suggested the idea: stacking the wording prediction on E5's grades raised the
all-other-graded Pearson from 0.667 to about 0.70 on ADS and from 0.782 to about 0.80 on
Mohler, with nothing on ADS from 10 graded answers; its grid chose the n-grams and the
ridge's alpha in ``grader.engine.scoring.wording``.

- a design passes if its Pearson with all other development answers graded (``all_other``)
  rises by at least 0.01 on ADS, and no data set's Pearson in a setting with graded answers
  (graded5, graded10, all_other) drops by more than 0.005; the setting without graded answers
  must not move (the wording needs graded answers);
- if both pass, the one with the larger sum of Pearson changes over those three settings and
  both data sets ships; on a tie, wording20 (fewer bands read it).

    python -m benchmarks.scorer_wording --out benchmarks/results/scorer_wording.json   # ~6 min
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from benchmarks.common import code_version
from benchmarks.scorer_data import load_table
from benchmarks.scorer_dev import shipped_cv
from grader.calibrate.scorer_fit import SETTINGS, SHIPPED, STAGE2, WORDING, ScorerDesign

DATASETS = ("mohler", "ads")
GRADED = ("graded5", "graded10", "all_other")
BEFORE = replace(  # E5's bands, shipped when this rule was written
    SHIPPED, bands=(("all_other", 20, STAGE2), ("graded10", 10, STAGE2), ("graded5", 5, STAGE2))
)
DESIGNS = {
    "shipped": BEFORE,
    "wording20": replace(
        SHIPPED,
        bands=(("all_other", 20, WORDING), ("graded10", 10, STAGE2), ("graded5", 5, STAGE2)),
    ),
    "wording10": replace(
        SHIPPED,
        bands=(("all_other", 20, WORDING), ("graded10", 10, WORDING), ("graded5", 5, STAGE2)),
    ),
}


def pearsons(table, design: ScorerDesign) -> dict:
    found = shipped_cv(table, design, 0)
    return {s: {d: found[s]["scorer"][d]["pearson"]["value"] for d in DATASETS} for s in SETTINGS}


def decide(figures: dict[str, dict]) -> dict:
    """The rule above, applied: each design's changes, whether it passes, what ships."""
    shipped = figures["shipped"]
    out: dict = {"designs": {}}
    for name in ("wording20", "wording10"):
        mine = figures[name]
        change = {s: {d: mine[s][d] - shipped[s][d] for d in DATASETS} for s in SETTINGS}
        passes = (
            change["all_other"]["ads"] >= 0.01
            and min(change[s][d] for s in GRADED for d in DATASETS) >= -0.005
            and all(abs(change["none"][d]) < 1e-9 for d in DATASETS)
        )
        total = sum(change[s][d] for s in GRADED for d in DATASETS)
        out["designs"][name] = {"change": change, "passes": passes, "sum": total}
    passing = [n for n in ("wording20", "wording10") if out["designs"][n]["passes"]]
    out["ships"] = (
        max(passing, key=lambda n: (round(out["designs"][n]["sum"], 6), n == "wording20"))
        if passing
        else "shipped"
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results")
    args = parser.parse_args()
    table = load_table()
    figures = {}
    for name, design in DESIGNS.items():
        print(name, flush=True)
        figures[name] = pearsons(table, design)
    result = {
        "benchmark": "scorer_wording",
        "code": code_version(),
        "split": "development parts only (benchmarks/splits.py)",
        "pearson": figures,
        "decision": decide(figures),
    }
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
