"""Issue 26, item 2: the judge's reading of conclusions the rules leave undecided, on ADS dev.

Every ADS development answer whose derived rubric names a conclusion the rules cannot read
(``conclusion_read``) is asked the two one-token questions of ``conclusion_judge`` by the
embedded judge, in one call. Reported: how many the judge decides (match / mismatch) at the
shipped margin and at others, the human score of each group (a mismatch on an answer the
course scored well is a correct conclusion read as wrong), and both questions' mean P(yes),
the yes-bias the pair is there to cancel. Development data only.

    python -m benchmarks.conclusion_judge_dev --out benchmarks/results/conclusion_judge_dev.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks.common import code_version, command
from benchmarks.datasets import as_bank, load
from grader.config import Settings
from grader.engine.judging.conclusion_judge import MARGIN, YES_NO, Ask, requests
from grader.engine.reading.conclusion_read import read_conclusion
from grader.engine.reading.rubrics import rubric_for
from grader.judge import make_judge

MARGINS = (0.1, 0.2, MARGIN, 0.4, 0.5)
GOOD = 0.5  # a human share at least this: the answer's conclusion is taken to be right


def undecided_asks(limit: int | None) -> tuple[list[Ask], dict[str, float]]:
    """The ADS dev answers the rules cannot read, and every answer's human share."""
    items, parts, language = load("ads")
    bank = as_bank("ads", items, language)
    questions = {q.id: q for q in bank.questions}
    rubrics = {qid: rubric_for(q, {}) for qid, q in questions.items()}
    asks, share = [], {}
    for item in items:
        rubric = rubrics[item.question_id]
        if parts[item.id] != "dev" or rubric.conclusion is None:
            continue
        share[item.id] = item.score / item.max_score
        if read_conclusion(rubric.conclusion, item.answer).decision == "undecided":
            asks.append(Ask(item.id, questions[item.question_id], rubric.conclusion, item.answer))
    return asks[:limit] if limit else asks, share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=None, help="at most this many answers")
    args = parser.parse_args()
    asks, share = undecided_asks(args.limit)
    judge = make_judge(Settings())
    started = time.monotonic()
    try:
        batch = [r for ask in asks for r in requests(ask)]
        scores = judge.score_labels(batch)
    finally:
        judge.close()
    seconds = time.monotonic() - started
    yes = YES_NO["zh"][1]
    pairs = [
        (ask, scores[2 * k].probabilities.get(yes, 0.0), scores[2 * k + 1].probabilities.get(yes, 0.0))
        for k, ask in enumerate(asks)
        if scores[2 * k].error is None and scores[2 * k + 1].error is None
    ]  # fmt: skip
    by_margin = {}
    for margin in MARGINS:
        groups: dict[str, list[float]] = {"match": [], "mismatch": [], "undecided": []}
        for ask, p_is, p_differs in pairs:
            gap = p_is - p_differs
            decision = "undecided" if abs(gap) < margin else "match" if gap > 0 else "mismatch"
            groups[decision].append(share[ask.key])
        by_margin[str(margin)] = {
            name: {
                "answers": len(v),
                "mean_human_share": round(sum(v) / len(v), 3) if v else None,
                "human_share_at_least_0.5": sum(s >= GOOD for s in v),
            }
            for name, v in groups.items()
        }
    report = {
        "benchmark": "conclusion_judge_dev",
        "command": command(),
        "code": code_version("grader", "prompts", __file__),
        "data": "ADS development part, derived rubrics with a conclusion",
        "answers_with_a_conclusion": len(share),
        "undecided_by_rules": len(asks),
        "scored_pairs": len(pairs),
        "judge_s": round(seconds, 1),
        "mean_p_yes": {
            "is": round(sum(p for _, p, _ in pairs) / max(1, len(pairs)), 3),
            "differs": round(sum(p for _, _, p in pairs) / max(1, len(pairs)), 3),
        },
        "shipped_margin": MARGIN,
        "by_margin": by_margin,
        "pairs": [
            {
                "id": a.key,
                "human_share": round(share[a.key], 3),
                "p_is": round(p, 3),
                "p_differs": round(d, 3),
                "expected": a.conclusion.expected,
            }
            for a, p, d in pairs
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("undecided_by_rules", "mean_p_yes", "by_margin")}))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
