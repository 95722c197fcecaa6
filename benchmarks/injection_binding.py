"""What the restatement cap and the injection binding do on data.

- **Restatement cap** (``grader.engine.finish.substance``): on the seed answer sets (rubrics from
  ``rubrics/``), the ADS and Mohler development parts (rubrics derived, as ``grader grade``
  derives them), how many answers the rule caps and their human shares; and the Pearson of
  the shipped scorer (``load_scorer("default")``, no graded answers, the answers' own features
  from ``results/scorer_features.jsonl.gz``) before and after the cap, on the answers the
  scorer grades. ``--test`` reports the test parts (once).
- **Injection binding**: the 42 clean/injected pairs and their pure attempts through the
  whole grade (``Pipeline.grade_many`` with the test embedder, the default scorer and a judge
  fooled by every attempt), with and without the seed answers as graded neighbours.

    python -m benchmarks.injection_binding --test --out benchmarks/results/injection_binding.json

Without ``--out`` the summary is printed and nothing is written.
``results/injection_binding_before.json``: the injection part run on the code before the
binding (commit 812e609), for the comparison in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks.lib.common import ROOT, code_version, command, write_result
from benchmarks.lib.datasets import as_bank, load, load_table
from benchmarks.lib.splits import ScoredAnswer, add_data_dir, use_data_dir
from grader.bank.files import load_bank
from grader.config import Settings
from grader.engine.finish import substance
from grader.engine.reading.blanks import blank_reason
from grader.engine.reading.rubrics import load_rubrics, rubric_for
from grader.engine.scoring.points import to_points
from grader.engine.scoring.scorer_model import load_scorer

SEEDS = ("seed_answers.jsonl", "seed_answers_2.jsonl")


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def seed_figures() -> dict:
    """Per seed set: answers capped, their human totals, and every answer worth 0 with what
    the rule said of it."""
    banks, rubrics = {}, {}
    for path in sorted((ROOT / "rubrics").glob("*.yaml")):
        bank = load_bank(path)
        rubrics |= load_rubrics(path, bank)
        banks |= {q.id: q for q in bank.questions}
    out = {}
    for name in SEEDS:
        rows = []
        for case in _lines(ROOT / "tests" / "data" / name):
            if blank_reason(case["answer"], Settings().rules.min_answer_chars) is not None:
                continue  # 0 by rule before any of this
            question, rubric = banks[case["question_id"]], rubrics[case["question_id"]]
            found = substance.assess(case["answer"], question, rubric)
            rows.append((case, found, rubric.points))
        capped = [(c, f, p) for c, f, p in rows if f.restated]
        claimed = [(c, f, p) for c, f, p in rows if any(not x.negated for x in f.claims)]
        out[name] = {
            "answers": len(rows),
            "capped": len(capped),
            "capped_ids": [c["id"] for c, _, _ in capped],
            "capped_human_share": [round(c["human_total"] / p, 3) for c, _, p in capped],
            "wrong_claims": [
                {
                    "id": c["id"],
                    "human_share": round(c["human_total"] / p, 3),
                    "claims": [x.claim for x in f.claims if not x.negated],
                }
                for c, f, p in claimed
            ],
            "restatements_by_kind": {
                kind: sum(1 for c, f, _ in rows if c["kind"] == kind and f.restated)
                for kind in sorted({c["kind"] for c, _, _ in rows})
            },
        }
    return out


def public_figures(name: str, part: str) -> dict:
    """Capped answers and the scorer's Pearson before and after, on one part of a data set."""
    items, _, language = load(name)
    bank = as_bank(name, items, language)
    questions = {q.id: q for q in bank.questions}
    by_id: dict[str, ScoredAnswer] = {i.id: i for i in items}
    scorer = load_scorer("default")
    human, before, after, capped = [], [], [], []
    for row in load_table():
        if row.dataset != name or row.part != part or row.rule is not None:
            continue
        item = by_id[row.id]
        question = questions[item.question_id]
        found = substance.assess(item.answer, question, rubric_for(question, {}))
        _, share = scorer.score(row.features)
        points = to_points(share, row.points)
        human.append(row.share * row.points)
        before.append(points)
        after.append(substance.capped(points, row.points, found))
        if found.restated:
            capped.append({"id": row.id, "human": item.score, "scorer": points,
                           "share": found.content_share, "reference": found.reference_share,
                           "answer": item.answer[:60]})  # fmt: skip
    pearson_before = float(np.corrcoef(human, before)[0, 1])
    pearson_after = float(np.corrcoef(human, after)[0, 1])
    return {
        "answers": len(human),
        "capped": len(capped),
        "capped_mean_human_share": round(
            float(np.mean([c["human"] / by_id[c["id"]].max_score for c in capped])), 3
        )
        if capped
        else None,
        "pearson_before": round(pearson_before, 4),
        "pearson_after": round(pearson_after, 4),
        "pearson_change": round(pearson_after - pearson_before, 4),
        "capped_answers": capped,
    }


def injection_figures() -> dict:
    """The 42 pairs and the pure attempts through the whole grade."""
    from tests.unit.test_injection_binding import PAIRS, PURE, grade, seed_graded

    out = {}
    for setting in ("none", "seed_graded"):
        above, kept_cleaned, pure_nonzero = [], 0, []
        for case in PAIRS:
            qid = case["question_id"]
            graded = seed_graded(qid) if setting == "seed_graded" else ()
            clean = grade(qid, case["clean"], graded=graded)
            injected = grade(qid, case["injected"], graded=graded)
            kept_cleaned += (i := injected.details.injection) is not None and i.kept == "cleaned"
            if injected.score > clean.score:
                above.append(case["id"])
        for cid, qid, attempt in PURE:
            graded = seed_graded(qid) if setting == "seed_graded" else ()
            if (score := grade(qid, attempt, graded=graded).score) != 0:
                pure_nonzero.append((cid, score))
        out[setting] = {
            "pairs": len(PAIRS),
            "injected_above_clean": above,
            "kept_cleaned": kept_cleaned,
            "pure_attempts": len(PURE),
            "pure_nonzero": pure_nonzero,
        }
    return out


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m benchmarks.injection_binding", description=__doc__.split("\n\n")[0]
    )
    found.add_argument("--out", type=Path, help="write the whole result here as JSON")
    found.add_argument("--test", action="store_true", help="also the test parts (report once)")
    add_data_dir(found)
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    use_data_dir(args)
    parts = ("dev", "test") if args.test else ("dev",)
    result = {
        "benchmark": "injection_binding",
        "command": command(),
        "code": code_version("grader", __file__),
        "thresholds": {
            "min_content_share": substance.MIN_CONTENT_SHARE,
            "min_grams": substance.MIN_GRAMS,
            "min_short_share": substance.MIN_SHORT_SHARE,
            "max_reference_share": substance.MAX_REFERENCE_SHARE,
            "cap_share": substance.CAP_SHARE,
        },
        "seeds": seed_figures(),
        "public": {f"{n}_{p}": public_figures(n, p) for n in ("ads", "mohler") for p in parts},
        "injections": injection_figures(),
    }
    summary = {k: {kk: vv for kk, vv in v.items() if kk != "capped_answers"}
               for k, v in result["public"].items()}  # fmt: skip
    print(json.dumps({"seeds": {k: {kk: v[kk] for kk in ("answers", "capped", "capped_human_share")}
                                for k, v in result["seeds"].items()},
                      "public": summary, "injections": result["injections"]},
                     ensure_ascii=False, indent=1))  # fmt: skip
    if args.out:
        write_result(result, args.out)


if __name__ == "__main__":
    main()
