"""What answers worth nothing get: the hand-graded seed answers through the production grade.

Issue 26's bar: on the seed questions with the project's rubrics, an answer worth 0 (a wrong
claim, a wrong conclusion, a restated question, another question's answer, an off-topic one)
gets at most 10 % of the points, and the grades use the whole scale. This grades a seed answer
file the way ``grader grade`` does by default (e5 embeddings, the shipped scorer, the judge's
budget plan), one batch per bank, and reports by the answers' ``kind``: how many of those worth
0 stay at or under 10 %, their mean share, and the mean share of the full-mark answers. The
judge is the scripted one: the budget plan asks no criterion check of a Chinese answer, so
those grades are production's; English answers' judge reading is the script's, not a model's.

``--judge vllm --plan anchored`` grades with the embedded 1.5B in plan ``anchored``
(``engine.scoring.anchored``: the judge reads every Chinese answer on these reviewed rubrics, set
between its readings of each question's reference and two empty anchors, a quarter of the
final share); ``--plan budget`` with ``--judge vllm`` gives the same grades as the script.

Seed set 1 (``tests/data/seed_answers.jsonl``) is development data; seed set 2
(``seed_answers_2.jsonl``) is held out: read it once per design. Seed set 3
(``seed_answers_3.jsonl``) is development data too, written to tune the zero gates on.

    python -m benchmarks.seed_zeros --set 1|2|3 [--judge vllm --plan anchored] \
        [--out benchmarks/results/seed_zeros_1.json]   # default: results/seed_zeros_SET.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks.lib.common import RESULTS, ROOT, code_version, command, write_result
from grader.bank.files import load_bank
from grader.config import JudgeSettings, Settings
from grader.embed import make_embedder
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.judge import make_judge
from grader.models import Submission

SETS = {"1": "seed_answers.jsonl", "2": "seed_answers_2.jsonl", "3": "seed_answers_3.jsonl"}
HELD_OUT = {"2"}
AT_MOST = 0.1  # the bar for an answer worth 0, as a share of the points


def grade_set(
    seeds: list[dict], judge_backend: str = "scripted", plan: str = "budget"
) -> dict[str, tuple[float, float]]:
    """(share of the points given, human share) per seed id, one batch per bank."""
    where = {q.id: path for path in sorted((ROOT / "rubrics").glob("*.yaml"))
             for q in load_bank(path).questions}  # fmt: skip
    settings = Settings(judge=JudgeSettings(backend=judge_backend, plan=plan))  # type: ignore[arg-type]
    embedder, judge = make_embedder(settings), make_judge(settings)
    by_bank: dict[Path, list[Submission]] = defaultdict(list)
    for s in seeds:
        submission = Submission(
            id=s["id"], question_id=s["question_id"], answer=s["answer"], student=s["student"]
        )
        by_bank[where[s["question_id"]]].append(submission)
    human = {s["id"]: s["human_total"] for s in seeds}
    shares = {}
    for path, submissions in by_bank.items():
        bank = load_bank(path)
        pipeline = Pipeline(bank, load_rubrics(path, bank), judge, settings, embedder=embedder)
        for g in pipeline.grade_many(submissions):
            points = g.max_score or 1.0
            shares[g.submission_id] = ((g.score or 0.0) / points, human[g.submission_id] / points)
    return shares


def report(seeds: list[dict], shares: dict[str, tuple[float, float]]) -> dict:
    zero_by_kind: dict[str, list[float]] = defaultdict(list)
    for s in seeds:
        given, wanted = shares[s["id"]]
        if wanted == 0:
            zero_by_kind[s["kind"]].append(given)
    zeros = [x for xs in zero_by_kind.values() for x in xs]
    full = [given for given, wanted in shares.values() if wanted >= 0.999]
    given, wanted = zip(*shares.values(), strict=True)
    return {
        "answers": len(shares),
        "pearson": round(float(np.corrcoef(given, wanted)[0, 1]), 3),
        "worth_0": len(zeros),
        "worth_0_at_most_10pct": sum(x <= AT_MOST + 1e-9 for x in zeros),
        "worth_0_mean_share": round(statistics.mean(zeros), 3) if zeros else None,
        "worth_0_by_kind": {
            kind: {
                "answers": len(xs),
                "at_most_10pct": sum(x <= AT_MOST + 1e-9 for x in xs),
                "mean_share": round(statistics.mean(xs), 3),
                "max_share": round(max(xs), 3),
            }
            for kind, xs in sorted(zero_by_kind.items())
        },
        "full_marks": len(full),
        "full_marks_mean_share": round(statistics.mean(full), 3) if full else None,
    }


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m benchmarks.seed_zeros", description=__doc__.splitlines()[0]
    )
    found.add_argument("--set", choices=sorted(SETS), default="1")
    found.add_argument("--judge", choices=("scripted", "vllm"), default="scripted")
    found.add_argument("--plan", choices=("budget", "full", "anchored"), default="budget")
    found.add_argument("--out", type=Path, help="default: results/seed_zeros_SET.json")
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    path = ROOT / "tests" / "data" / SETS[args.set]
    seeds = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    result = {
        "benchmark": "seed_zeros",
        "data": f"{path.name} ({'held out' if args.set in HELD_OUT else 'development'}), rubrics/",
        "settings": f"e5, the shipped scorer, judge plan {args.plan}, {args.judge} judge",
        "command": command(),
        "code": code_version("grader", __file__),
        **report(seeds, grade_set(seeds, args.judge, args.plan)),
    }
    print(json.dumps({k: result[k] for k in ("answers", "pearson", "worth_0",
                                              "worth_0_at_most_10pct")}))  # fmt: skip
    write_result(result, args.out or RESULTS / f"seed_zeros_{args.set}.json")


if __name__ == "__main__":
    main()
