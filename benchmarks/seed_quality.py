"""How close the embedded judge comes to an instructor on the hand-graded seed answers.

tests/data/seed_answers.jsonl holds 40 answers to the seed banks' subjective questions (strong,
partial, weak, English, paraphrased, off-topic, blank), each scored per criterion by hand. This
grades all of them the way production does — ``Pipeline.grade_many``, one batch per bank — and
compares the judge, the no-LLM key-point coverage and the mean of the two with the human totals,
so a change of model, prompt or rubric is measured rather than eyeballed on a few answers.

    python -m benchmarks.seed_quality --model qwen2.5-coder-1.5b-instruct \
        --out benchmarks/results/seed_quality_1.5b.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path

from benchmarks.common import ROOT, code_version, fmt
from grader.bank.files import load_bank
from grader.config import JudgeSettings, Settings
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.judge import make_judge
from grader.judge.vllm_local import resolve_model
from grader.models import Grade, GradeStatus, Submission

SEEDS = ROOT / "tests" / "data" / "seed_answers.jsonl"
BANKS = ROOT / "rubrics"
SCORERS = ("judge", "coverage", "mean")


# --- statistics ------------------------------------------------------------------------------


def ranks(values: list[float]) -> list[float]:
    """1-based ranks, ties sharing the mean of the ranks they span (as Spearman needs)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            result[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return result


def pearson(x: list[float], y: list[float]) -> float | None:
    """None when either side is constant (or fewer than two pairs): undefined, not 0."""
    if len(x) < 2:
        return None
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def spearman(x: list[float], y: list[float]) -> float | None:
    return pearson(ranks(x), ranks(y))


def round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def agreement(predicted: list[float], human: list[float], max_scores: list[float]) -> dict:
    errors = [p - h for p, h in zip(predicted, human, strict=True)]
    n = len(errors)
    return {
        "n": n,
        "mae": _r(statistics.fmean(abs(e) for e in errors)) if n else None,
        "mae_of_max": _r(
            statistics.fmean(abs(e) / m for e, m in zip(errors, max_scores, strict=True))
        )
        if n
        else None,
        "mean_signed_error": _r(statistics.fmean(errors)) if n else None,
        "spearman": _r(spearman(predicted, human)),
        "pearson": _r(pearson(predicted, human)),
        "exact_rounded": _r(
            sum(round_half_up(p) == round_half_up(h) for p, h in zip(predicted, human, strict=True))
            / n
        )
        if n
        else None,
    }


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


# --- grading ---------------------------------------------------------------------------------


def read_seeds(limit: int | None) -> list[dict]:
    lines = SEEDS.read_text(encoding="utf-8").splitlines()
    seeds = [json.loads(line) for line in lines if line.strip()]
    return seeds[:limit] if limit else seeds


def bank_paths() -> dict[str, Path]:
    """Question id -> the bank file that holds it."""
    where = {}
    for path in sorted(BANKS.glob("*.yaml")):
        for question in load_bank(path).questions:
            where[question.id] = path
    return where


def grade_all(seeds: list[dict], settings: Settings) -> tuple[dict[str, Grade], dict]:
    """Grades by seed id, and timings: preparing the model, loading it, grading."""
    started = time.monotonic()
    resolve_model(
        settings.judge.model, settings.cache.dir
    )  # converts a packaged model on first use; instant afterwards
    prepare_s = time.monotonic() - started
    started = time.monotonic()
    judge = make_judge(settings)
    load_s = time.monotonic() - started

    where = bank_paths()
    by_bank: dict[Path, list[Submission]] = defaultdict(list)
    for seed in seeds:
        by_bank[where[seed["question_id"]]].append(
            Submission(
                id=seed["id"],
                question_id=seed["question_id"],
                answer=seed["answer"],
                student=seed["student"],
            )
        )
    grades: dict[str, Grade] = {}
    per_bank = {}
    grading_s = 0.0
    try:
        for path, submissions in by_bank.items():
            bank = load_bank(path)
            pipeline = Pipeline(bank, load_rubrics(path, bank), judge, settings)
            started = time.monotonic()
            batch = pipeline.grade_many(submissions)
            elapsed = time.monotonic() - started
            grading_s += elapsed
            per_bank[path.stem] = {"answers": len(submissions), "wall_s": round(elapsed, 2)}
            grades.update({g.submission_id: g for g in batch})
    finally:
        judge.close()
    timing = {
        "prepare_s": round(prepare_s, 2),
        "model_load_s": round(load_s, 2),
        "grading_wall_s": round(grading_s, 2),
        "answers_per_s": round(len(grades) / grading_s, 4) if grading_s else None,
        "per_bank": per_bank,
    }
    return grades, timing


# --- the report ------------------------------------------------------------------------------


def scorer_values(grade: Grade) -> dict[str, float]:
    """The three scorers for one graded answer. A blank answer is 0 by rule: no coverage computed."""
    coverage = grade.details.coverage_points
    if coverage is None:
        coverage = grade.score
    return {"judge": grade.score, "coverage": coverage, "mean": (grade.score + coverage) / 2}


def per_answer(seed: dict, grade: Grade) -> dict:
    graded = grade.status is GradeStatus.GRADED
    return {
        "id": seed["id"],
        "question_id": seed["question_id"],
        "kind": seed["kind"],
        "status": grade.status.value,
        "method": grade.method.value,
        "max_score": grade.max_score,
        "human_total": seed["human_total"],
        **({f"{k}_score": _r(v) for k, v in scorer_values(grade).items()} if graded else {}),
        "human_scores": seed["human_scores"],
        "criteria": [c.model_dump() for c in grade.criteria],
        "feedback": grade.feedback,
        "review_codes": [r.code for r in grade.review_reasons],
        "review_messages": [r.message for r in grade.review_reasons],
    }


def criterion_agreement(seeds: list[dict], grades: dict[str, Grade]) -> dict:
    """Exact agreement of judge points with the human's, criterion by criterion."""
    by_criterion: dict[str, Counter] = defaultdict(Counter)
    by_max: dict[str, Counter] = defaultdict(Counter)
    total = Counter()
    for seed in seeds:
        grade = grades[seed["id"]]
        if grade.status is not GradeStatus.GRADED or grade.method.value != "judge":
            continue
        for c in grade.criteria:
            human = seed["human_scores"][c.id]
            outcome = "agree" if c.points == human else ("over" if c.points > human else "under")
            for counter in (
                by_criterion[f"{seed['question_id']}/{c.id}"],
                by_max[f"{c.max_points:g}"],
                total,
            ):
                counter[outcome] += 1
                counter["n"] += 1

    def rate(counter: Counter) -> dict:
        return {
            "n": counter["n"],
            "agree": _r(counter["agree"] / counter["n"]),
            "over": counter["over"],
            "under": counter["under"],
        }

    return {
        "overall": rate(total),
        "by_criterion_max_points": {k: rate(v) for k, v in sorted(by_max.items())},
        "by_criterion": {k: rate(v) for k, v in sorted(by_criterion.items())},
    }


def build_report(
    seeds: list[dict], grades: dict[str, Grade], timing: dict, model: str, code: dict
) -> dict:
    graded = [s for s in seeds if grades[s["id"]].status is GradeStatus.GRADED]
    human = [float(s["human_total"]) for s in graded]
    max_scores = [grades[s["id"]].max_score for s in graded]
    values = [scorer_values(grades[s["id"]]) for s in graded]
    metrics = {name: agreement([v[name] for v in values], human, max_scores) for name in SCORERS}

    kinds: dict[str, list[float]] = defaultdict(list)
    for seed, v in zip(graded, values, strict=True):
        kinds[seed["kind"]].append(v["judge"] - seed["human_total"])
    by_kind = {
        kind: {
            "n": len(errors),
            "mean_signed_error": _r(statistics.fmean(errors)),
            "mae": _r(statistics.fmean(abs(e) for e in errors)),
        }
        for kind, errors in sorted(kinds.items())
    }

    flags = Counter(r.code for g in grades.values() for r in g.review_reasons)
    tokens = {
        key: sum(getattr(g.provenance, key) or 0 for g in grades.values())
        for key in ("prompt_tokens", "completion_tokens", "cached_tokens", "attempts")
    }
    judged = [g for g in grades.values() if g.method.value == "judge"]
    # the verdict mode samples text; the probability mode generates none (no "sampling")
    sampling = {
        json.dumps(s.model_dump() if (s := g.provenance.sampling) else None, sort_keys=True)
        for g in judged
    }
    return {
        "benchmark": "seed_quality",
        "model": model,
        "code": code,
        "backend": judged[0].provenance.backend if judged else None,
        "judge_modes": sorted({g.provenance.judge_mode or "verdict" for g in judged}),
        "sampling": [json.loads(item) for item in sorted(sampling)],
        "prompt_versions": sorted({g.provenance.prompt_version for g in judged}),
        "rubric_versions": dict(
            sorted((g.question_id, g.provenance.rubric_version) for g in judged)
        ),
        "answers": len(seeds),
        "graded": len(graded),
        "judged": len(judged),
        "unscored": sum(g.status is GradeStatus.UNSCORED for g in grades.values()),
        "metrics": metrics,
        "by_kind": by_kind,
        "criterion_agreement": criterion_agreement(seeds, grades),
        "review_flags": dict(flags.most_common()),
        "timing": timing,
        "tokens": tokens,
        "per_answer": [per_answer(s, grades[s["id"]]) for s in seeds],
    }


def print_report(report: dict) -> None:
    print(
        f"\nseed quality — {report['model']}, {'/'.join(report['judge_modes'])} mode"
        f"  ({report['graded']} graded of {report['answers']},"
        f" {report['unscored']} unscored)"
    )
    columns = ("mae", "mae_of_max", "mean_signed_error", "spearman", "pearson", "exact_rounded")
    print(f"{'scorer':<10}" + "".join(f"{c:>19}" for c in columns))
    for name in SCORERS:
        m = report["metrics"][name]
        print(f"{name:<10}" + "".join(f"{fmt(m[c]):>19}" for c in columns))

    print("\njudge − human by kind")
    for kind, row in report["by_kind"].items():
        print(
            f"  {kind:<12} n={row['n']:<3} mean signed {row['mean_signed_error']:+.3f}"
            f"   MAE {row['mae']:.3f}"
        )

    crit = report["criterion_agreement"]
    print(
        f"\ncriterion exact agreement: {fmt(crit['overall']['agree'])} of "
        f"{crit['overall']['n']} (over {crit['overall']['over']}, under {crit['overall']['under']})"
    )
    for max_points, row in crit["by_criterion_max_points"].items():
        print(
            f"  {max_points}-point criteria: {fmt(row['agree'])} of {row['n']}"
            f" (over {row['over']}, under {row['under']})"
        )

    print("\nreview flags: " + ", ".join(f"{k} {v}" for k, v in report["review_flags"].items()))
    t, tok = report["timing"], report["tokens"]
    print(
        f"timing: prepare {t['prepare_s']} s, model load {t['model_load_s']} s, grading "
        f"{t['grading_wall_s']} s, {fmt(t['answers_per_s'])} answers/s"
    )
    print(
        f"tokens: prompt {tok['prompt_tokens']}, completion {tok['completion_tokens']}, "
        f"cached {tok['cached_tokens']}, attempts {tok['attempts']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        default=JudgeSettings.model_fields["model"].default,
        help="packaged model name or a local model folder",
    )
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON report")
    parser.add_argument("--limit", type=int, default=None, help="only the first N seed answers")
    args = parser.parse_args()

    settings = Settings(judge=JudgeSettings(backend="vllm", model=args.model))
    code = code_version(
        "grader", "prompts", "rubrics"
    )  # before grading: a checkout edited meanwhile must not be credited
    seeds = read_seeds(args.limit)
    grades, timing = grade_all(seeds, settings)
    report = build_report(seeds, grades, timing, args.model, code)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print_report(report)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
