"""Two judge designs on the same answers: is one's Pearson with the graders really higher?

Reads ``agreement.py`` results of two designs run on the same sample (same data, questions and
limit) and reports each design's Pearson with the graders' mean, their difference, and a 95 %
interval of the difference from a paired bootstrap that resamples whole questions (an answer's
neighbours of the same question share its errors). With 80 answers each design's own interval
is about ±0.18 wide, but the two are read on the same answers, so their difference is known
more tightly than that.

    python -m benchmarks.judge_paired benchmarks/results/agreement_1.5b_test_probability.json \\
        benchmarks/results/agreement_1.5b_test_probability_continued_tight.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks.common import paired_pearson_difference, pearson

RESAMPLES = 10_000


def judged(path: Path) -> dict[int, tuple[str, float, float]]:
    """line -> (question, graders' mean, judge score) for every graded answer of one run; the
    data's corrupt answers ('#NAME?') are left out, as ``agreement.py`` leaves them out."""
    run = json.loads(path.read_text(encoding="utf-8"))
    corrupt = {r["line"] for r in run["corrupt_answers"]}
    return {
        r["line"]: (r["question_id"], r["score_avg"], r["judge_score"])
        for r in run["per_answer"]
        if r.get("judge_score") is not None and r["line"] not in corrupt
    }


def paired(first: Path, second: Path) -> dict:
    a, b = judged(first), judged(second)
    lines = sorted(a.keys() & b.keys())
    if len(lines) < len(a) or len(lines) < len(b):
        raise SystemExit(
            f"the runs graded different answers ({len(a)}, {len(b)}, {len(lines)} shared)"
        )
    human = np.array([a[line][1] for line in lines])
    x, y = np.array([a[line][2] for line in lines]), np.array([b[line][2] for line in lines])
    questions = np.array([a[line][0] for line in lines])
    return {
        "first": {"file": str(first), "pearson": round(pearson(x, human), 3)},
        "second": {"file": str(second), "pearson": round(pearson(y, human), 3)},
        "second_minus_first": paired_pearson_difference(human, x, y, questions, RESAMPLES),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path, help="agreement.py output of one design")
    parser.add_argument("second", type=Path, help="the other design's, on the same answers")
    args = parser.parse_args()
    print(json.dumps(paired(args.first, args.second), indent=2))


if __name__ == "__main__":
    main()
