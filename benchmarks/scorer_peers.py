"""Issue 13: does the peer margin (closeness to the classmates' answers) help as a scorer
feature? Development CV only (``scorer_dev.shipped_cv``: the production procedure).

The decision rule, written before the figures: ``peer_margin`` joins the first stage-1
feature set (the shipped design's, judge and language gate unchanged) if, on the development
CV of the answers the scorer grades, it raises the Pearson without graded answers by at
least 0.01 on one data set and lowers no data set's Pearson without graded answers or with 5
by more than 0.005.

    python -m benchmarks.scorer_peers --out benchmarks/results/scorer_peers.json   # 3 min
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.common import code_version
from benchmarks.scorer_data import load_table
from benchmarks.scorer_dev import shipped_cv
from grader.calibrate.scorer_fit import EXPLAINABLE, SETTINGS, SHIPPED, ScorerDesign, with_judge

WITH_PEERS = with_judge(
    ScorerDesign(stage1=(
        ("signals+cohort+peers", (*EXPLAINABLE, "cohort_reference_z", "peer_margin")),
        ("signals+cohort", (*EXPLAINABLE, "cohort_reference_z")),
        ("signals", EXPLAINABLE),
    )),
    languages=("en",),
)  # fmt: skip
DATASETS = ("mohler", "ads")


def pearsons(table, design: ScorerDesign) -> dict:
    found = shipped_cv(table, design, 0)
    return {s: {d: found[s]["scorer"][d]["pearson"]["value"] for d in DATASETS} for s in SETTINGS}


def decide(shipped: dict, peers: dict) -> str:
    gains = {d: peers["none"][d] - shipped["none"][d] for d in DATASETS}
    drops = [peers[s][d] - shipped[s][d] for s in ("none", "graded5") for d in DATASETS]
    ships = max(gains.values()) >= 0.01 and min(drops) >= -0.005
    return (f"none {gains['mohler']:+.4f} mohler, {gains['ads']:+.4f} ads; worst none/graded5 "
            f"change {min(drops):+.4f} -> {'ships' if ships else 'not shipped'}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results")
    args = parser.parse_args()
    table = load_table()
    result = {"benchmark": "scorer_peers", "code": code_version(),
              "shipped": pearsons(table, SHIPPED), "with_peers": pearsons(table, WITH_PEERS)}  # fmt: skip
    result["decision"] = decide(result["shipped"], result["with_peers"])
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
