"""The seed answers by kind: what a right, a partial, a mixed, a fluent wrong and a worthless
answer get from the production grade, against an instructor's hand grades.

Each hand-graded seed set (``tests/data/seed_answers*.jsonl``) is graded as ``grader grade``
grades by default (e5, the shipped scorer, the judge's budget plan with the scripted judge,
which asks nothing of a Chinese answer), one batch per bank. Per ``kind``: answers, the mean
human and grader shares of the points, how many went to review; over the set: Spearman,
Pearson and the mean absolute error in shares, the share flagged, how many answers worth at
most 10 % got more than 30 % without a flag, how many injected answers got more than their
content + 10 %, how many grades are a quarter of the points or more off and how many of those
the review queue holds, and the grading time per answer (models loaded). Sets 1, 3, 4, 7, 10,
12 and 13 are development data; sets 2, 5, 6, 8, 9, 11 and 14–23 are held out: read each
once per design.

``--claims-set`` reads the claim-reading development set instead (``lib.claims_reading``:
``claims/claims_90.jsonl`` under ``GRADER_DATA_DIR``, each answer read for its claim by the
older wording matcher and by the rules with patterns written blind); no model.

``--claim-check`` asks the judge's claim check of every decisive part the rules left absent in
the development sets' answers instead, per answer language and margin against the instructor's
points (``lib.claim_check``); ``--store`` writes the margin it fits into a trust file, which is
how the shipped entry of the embedded 1.5B was measured.

    python -m benchmarks.seed_kinds --sets 1,3,4,7,10,12,13 [--judge vllm --plan full] [--out FILE]
    python -m benchmarks.seed_kinds --claims-set [--patterns FILE] [--out FILE]
    python -m benchmarks.seed_kinds --claim-check --sets 1,3,4,7,10,12,13 --judge vllm \
        [--store grader/engine/scoring/judge_trust.json] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

from scipy import stats

from benchmarks.lib import claim_check, claims_reading
from benchmarks.lib.common import ROOT, code_version, command, write_result
from benchmarks.lib.splits import add_data_dir, data_file, use_data_dir
from grader.bank.files import load_bank
from grader.config import JudgeSettings, Settings
from grader.embed import Embedder, make_embedder
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.engine.scoring import judge_trust
from grader.judge import make_judge
from grader.models import Grade, Submission

# Seed set N lives in ``seed_answers_N.jsonl`` (set 1 in ``seed_answers.jsonl``); the
# development sets are tuned on, every other one is held out.
SETS = {"1": "seed_answers.jsonl", **{str(n): f"seed_answers_{n}.jsonl" for n in range(2, 24)}}
DEVELOPMENT = {"1", "3", "4", "7", "10", "12", "13"}
HELD_OUT = set(SETS) - DEVELOPMENT
WORTHLESS, GENEROUS = 0.1, 0.3  # an answer worth at most 10 % must get at most 30 % or a flag
INJECTION_SLACK = 0.1  # an injected answer: at most its content + 10 %
LARGE_ERROR = 0.25  # a grade this far from the instructor's: what the review queue is for


def load_seeds(sets: list[str]) -> list[dict]:
    seeds = []
    for name in sets:
        path = ROOT / "tests" / "data" / SETS[name]
        seeds += [
            json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line
        ]
    return seeds


def grade_seeds(
    seeds: list[dict], settings: Settings, cold: bool = False
) -> tuple[dict[str, Grade], float]:
    """Each seed's grade, one batch per bank, and the seconds grading took (models loaded;
    ``cold``: every answer embedded, none read from the vector cache)."""
    where = {q.id: path for path in sorted((ROOT / "rubrics").glob("*.yaml"))
             for q in load_bank(path).questions}  # fmt: skip
    embedder = make_embedder(settings)
    if cold and embedder is not None:
        embedder = Embedder(
            settings.embeddings.model, cache_dir=settings.cache.dir, disk_cache=False
        )
    judge = make_judge(settings)
    by_bank: dict[Path, list[Submission]] = defaultdict(list)
    for s in seeds:
        by_bank[where[s["question_id"]]].append(
            Submission(
                id=s["id"], question_id=s["question_id"], answer=s["answer"], student=s["student"]
            )
        )
    grades: dict[str, Grade] = {}
    started = time.perf_counter()
    for path, submissions in by_bank.items():
        bank = load_bank(path)
        pipeline = Pipeline(bank, load_rubrics(path, bank), judge, settings, embedder=embedder)
        grades.update((g.submission_id, g) for g in pipeline.grade_many(submissions))
    return grades, time.perf_counter() - started


def kind_table(seeds: list[dict], grades: dict[str, Grade]) -> dict:
    """The per-kind rows and the set's figures."""
    rows = []
    for s in seeds:
        g = grades[s["id"]]
        points = g.max_score or 1.0
        rows.append(
            {
                "kind": s["kind"],
                "human": s["human_total"] / points,
                "grader": (g.score or 0.0) / points,
                "flagged": g.needs_review,
            }
        )
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_kind[row["kind"]].append(row)
    human, given = [r["human"] for r in rows], [r["grader"] for r in rows]
    worthless = [r for r in rows if r["human"] <= WORTHLESS + 1e-9]
    injected = [r for r in rows if r["kind"] == "injection"]
    large = [r for r in rows if abs(r["grader"] - r["human"]) >= LARGE_ERROR - 1e-9]
    return {
        "kinds": {
            kind: {
                "answers": len(xs),
                "human": round(statistics.fmean(x["human"] for x in xs), 3),
                "grader": round(statistics.fmean(x["grader"] for x in xs), 3),
                "flagged": sum(x["flagged"] for x in xs),
            }
            for kind, xs in sorted(by_kind.items())
        },
        "answers": len(rows),
        "spearman": _correlation(stats.spearmanr, given, human),
        "pearson": _correlation(stats.pearsonr, given, human),
        "mae_share": round(
            statistics.fmean(abs(a - b) for a, b in zip(given, human, strict=True)), 3
        ),
        "flagged_share": round(sum(r["flagged"] for r in rows) / len(rows), 3),
        "worthless": len(worthless),
        "worthless_generous_unflagged": sum(
            r["grader"] > GENEROUS + 1e-9 and not r["flagged"] for r in worthless
        ),
        "injected": len(injected),
        "injected_over_content": sum(
            r["grader"] > r["human"] + INJECTION_SLACK + 1e-9 for r in injected
        ),
        "large_errors": len(large),
        "large_errors_flagged": sum(r["flagged"] for r in large),
    }


def _correlation(kind, given: list[float], human: list[float]) -> float | None:
    """None where either side is constant: undefined, not 0."""
    if len(set(given)) < 2 or len(set(human)) < 2:
        return None
    return round(float(kind(given, human).statistic), 3)


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m benchmarks.seed_kinds", description=__doc__.splitlines()[0]
    )
    found.add_argument(
        "--sets",
        default="1,3",
        help="comma-separated: 1,3,4,7,10,12,13 dev; 2,5,6,8,9,11,14–23 held out",
    )
    found.add_argument("--judge", choices=("scripted", "vllm"), default="scripted")
    found.add_argument("--plan", choices=("budget", "full", "anchored"), default="budget")
    found.add_argument(
        "--claims-set", action="store_true", help="read the claim-reading set instead (no model)"
    )
    found.add_argument(
        "--patterns", type=Path, default=claims_reading.BLIND_PATTERNS,
        help="with --claims-set: claim id -> patterns (default: the blind ones)",
    )  # fmt: skip
    found.add_argument(
        "--claim-check", action="store_true",
        help="ask the judge's claim check of the parts the rules left absent (development sets)",
    )  # fmt: skip
    found.add_argument("--store", type=Path, help="with --claim-check: a trust file for the fit")
    found.add_argument(
        "--cold", action="store_true", help="embed every answer (no vector cache): for the time"
    )
    found.add_argument("--out", type=Path, help="the result JSON (default: the terminal)")
    add_data_dir(found)
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    use_data_dir(args)
    if args.claims_set:
        write_result(claims_result(args.patterns), args.out)
        return
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in sets if s not in SETS]
    if unknown:
        parser().error(f"--sets: unknown set(s) {unknown}; known: {sorted(SETS)}")
    if args.claim_check:
        held_out = sorted(set(sets) & HELD_OUT)
        if held_out:
            parser().error(f"--sets: {held_out} held out; a margin is fitted on development sets")
        write_result(claim_check_result(sets, args.judge, args.store), args.out)
        return
    seeds = load_seeds(sets)
    settings = Settings(judge=JudgeSettings(backend=args.judge, plan=args.plan))  # type: ignore[arg-type]
    grades, seconds = grade_seeds(seeds, settings, args.cold)
    result = {
        "benchmark": "seed_kinds",
        "data": ", ".join(
            f"{SETS[s]} ({'held out' if s in HELD_OUT else 'development'})" for s in sets
        ),
        "settings": f"e5, the shipped scorer, judge plan {args.plan}, {args.judge} judge"
        + (", every answer embedded" if args.cold else ""),
        "command": command(),
        "code": code_version("grader", "rubrics", __file__),
        "grading_seconds": round(seconds, 1),
        "seconds_per_answer": round(seconds / len(seeds), 3),
        **kind_table(seeds, grades),
    }
    write_result(result, args.out)


def claim_check_result(sets: list[str], judge: str, store: Path | None) -> dict:
    """The judge's claim check on the sets' unread parts, and the margin fitted on it."""
    read, model, seconds = claim_check.claim_readings(load_seeds(sets), judge)
    data = f"seed answer sets {', '.join(sets)} (development), seed_kinds --claim-check"
    fitted = judge_trust.fit_claims(
        ((r["language"], r["gap"], r["credited"]) for r in read), data=data
    )
    if store is not None:
        judge_trust.store_claims(model, fitted, store)
    return {
        "benchmark": "seed_kinds --claim-check",
        "data": data,
        "model": model,
        "command": command(),
        "code": code_version("grader", "rubrics", "prompts", __file__),
        "asks": len(read),
        "seconds_per_ask": round(seconds / max(1, len(read)), 3),
        "precision_wanted": judge_trust.CLAIM_PRECISION,
        "fitted": {k: v.model_dump() for k, v in fitted.items()},
        "table": claim_check.margin_table(read),
    }


def claims_result(patterns: Path) -> dict:
    """The claim-reading set read by the wording matcher and the rules (``lib.claims_reading``)."""
    data = data_file("claims", "claims_90.jsonl")
    rows = claims_reading.load_rows(data)
    read = claims_reading.read_set(rows, claims_reading.load_patterns(patterns))
    return {
        "benchmark": "seed_kinds --claims-set",
        "data": f"{data.name} (development), patterns {patterns.name}",
        "command": command(),
        "code": code_version("grader", __file__),
        "figures": claims_reading.summary(read),
        "claims": claims_reading.per_claim(read, rows),
    }


if __name__ == "__main__":
    main()
