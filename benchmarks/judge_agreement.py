"""The two judge modes' agreement with human graders on held-out answers, side by side, beside
key-point coverage and the e5 reference cosine on the same answers (issue 12's evaluation).

Data (``scorer_eval_data``): the Mohler test half and the ADS test part (``splits.py``;
rubrics derived from the reference, as for an imported bank without rubric files), and the
two Chinese seed sets with the project's reviewed rubrics (``seed_dev``: development answers;
``seed_2``: the second set). The sample, a rule fixed before any run: per question the first
``--per-question`` answers by ``scorer_judge.judge_sample`` (a sha256 of the question and the
answer id).

Both modes run on ONE engine, its prefix cache reset before each data set and mode, through
``Pipeline.grade_many`` with no embedder and no scorer: the judge's own points (blank answers
0 by rule in both). Scores are compared as shares of each question's maximum. Each finished
(data set, mode) is written to ``--out`` at once; a rerun skips those already there.

    python -m benchmarks.judge_agreement --out benchmarks/results/judge_agreement_1.5b.json \
        --datasets seed_2 --per-question 2
    python -m benchmarks.judge_agreement --out benchmarks/results/judge_agreement_1.5b.json \
        --datasets ads --per-question 1
    python -m benchmarks.judge_agreement --out benchmarks/results/judge_agreement_1.5b.json \
        --datasets mohler --per-question 1 --limit 16
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr, spearmanr

from benchmarks.common import code_version
from benchmarks.scorer_eval_data import Dataset, public_dataset, seed_datasets
from benchmarks.scorer_judge import _rank, judge_sample
from benchmarks.splits import ScoredAnswer
from grader.config import EmbeddingSettings, JudgeSettings, ScorerSettings, Settings
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import rubric_for
from grader.engine.signals.coverage import coverage_points
from grader.models import Submission

MODES = ("verdict", "probability")


def sample(dataset: Dataset, per_question: int, limit: int) -> list[ScoredAnswer]:
    """The first ``per_question`` answers of each question by the seeded rule; with
    ``limit``, the first ``limit`` of those by the same rule over the whole data set."""
    items = [i for exam in dataset.exams if exam.setting == "none" for i in exam.scored]
    chosen = judge_sample(items, per_question)
    if limit:
        keep = {i.id for i in sorted(chosen, key=lambda i: _rank(f"judge:all:{i.id}"))[:limit]}
        chosen = [i for i in chosen if i.id in keep]
    return chosen


def grade(dataset: Dataset, items: list[ScoredAnswer], judge, mode: str) -> dict:
    """One mode over the sample: the judge's shares, cost and the time it took."""
    settings = Settings(
        judge=JudgeSettings(backend="vllm", mode=mode),
        scorer=ScorerSettings(choice="none"),
        embeddings=EmbeddingSettings(model="none"),
    )
    pipeline = Pipeline(dataset.bank, dataset.rubrics, judge, settings)
    subs = [Submission(id=i.id, question_id=i.question_id, answer=i.answer) for i in items]
    subs.sort(key=lambda s: s.question_id)  # answers of a question share their prefix
    judge.reset_prefix_cache()
    started = time.perf_counter()
    grades = pipeline.grade_many(subs)
    wall = time.perf_counter() - started
    shares = {g.submission_id: g.score / g.max_score for g in grades if g.score is not None}
    prompt = sum((g.provenance.prompt_tokens or 0) for g in grades)
    cached = sum((g.provenance.cached_tokens or 0) for g in grades)
    return {
        "answers": len(grades),
        "scored": len(shares),
        "s_per_answer": round(wall / len(grades), 2),
        "prompt_tokens_per_answer": round(prompt / len(grades)),
        "cached_share": round(cached / prompt, 3) if prompt else None,
        "generated_tokens_per_answer": round(
            sum((g.provenance.completion_tokens or 0) for g in grades) / len(grades), 1
        ),
        "evidence_not_found": sum(
            any(r.code.value == "evidence_not_found" for r in g.review_reasons) for g in grades
        ),
        "shares": shares,
    }


def baselines(dataset: Dataset, items: list[ScoredAnswer], embedder) -> dict[str, dict[str, float]]:
    """Model-free key-point coverage (the same rubric the judge sees) and the e5 cosine."""
    questions = {q.id: q for q in dataset.bank.questions}
    coverage = {}
    for item in items:
        rubric = rubric_for(questions[item.question_id], dataset.rubrics)
        coverage[item.id] = coverage_points(rubric, item.answer) / rubric.points
    refs = embedder.encode([i.references[0] for i in items])
    answers = embedder.encode([i.answer for i in items])
    cosine = {i.id: float(a @ r) for i, a, r in zip(items, answers, refs, strict=True)}
    return {"coverage": coverage, "e5 cosine": cosine}


def agreement(items: list[ScoredAnswer], shares: dict[str, float]) -> dict:
    paired = [(shares[i.id], i.score / i.max_score) for i in items if i.id in shares]
    if len(paired) < 3:
        return {"n": len(paired)}
    pred, human = np.array(paired).T
    return {
        "n": len(paired),
        "pearson": round(float(pearsonr(pred, human)[0]), 3),
        "spearman": round(float(spearmanr(pred, human)[0]), 3),
        "mae_share": round(float(np.abs(pred - human).mean()), 3),
        "mean_share": round(float(pred.mean()), 3),
        "human_mean_share": round(float(human.mean()), 3),
    }


def table(report: dict) -> str:
    """The markdown table of benchmarks/README.md from the JSON."""
    lines = [
        "| data (answers) | scored by | Pearson | Spearman | MAE (share) | mean share (human) "
        "| s/answer | prompt tok/answer (cached) | generated tok/answer | evidence_not_found |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, found in report["runs"].items():
        for key in ("verdict", "probability", "coverage", "e5 cosine"):
            r = found.get(key)
            if r is None:
                continue
            cost = (
                f"{r['s_per_answer']} | {r['prompt_tokens_per_answer']} ({r['cached_share']:.0%}) "
                f"| {r['generated_tokens_per_answer']} | {r['evidence_not_found']}"
                if "s_per_answer" in r
                else " | | | "
            )
            lines.append(
                f"| {name} ({r['n']}) | {key} | {r.get('pearson', '')} | {r.get('spearman', '')} "
                f"| {r.get('mae_share', '')} | {r.get('mean_share', '')} "
                f"({r.get('human_mean_share', '')}) | {cost} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--datasets", nargs="+", default=["seed_2", "seed_dev", "ads", "mohler"]
    )  # fmt: skip
    parser.add_argument("--per-question", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="at most this many answers (0: all)")
    parser.add_argument(
        "--table", action="store_true", help="print the table of --out, run nothing"
    )
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.out.read_text())))
        return

    from grader.embed import make_embedder
    from grader.judge import make_judge

    report = json.loads(args.out.read_text()) if args.out.exists() else {"runs": {}}
    settings = Settings(judge=JudgeSettings(backend="vllm"))
    report.update(
        machine=f"{platform.machine()}, {__import__('os').cpu_count()} CPUs",
        model=settings.judge.model,
        dtype=settings.judge.vllm.dtype,
        code=code_version("grader", "benchmarks"),
    )
    embedder = make_embedder(settings)
    datasets = {d.name: d for d in seed_datasets()}
    judge = make_judge(settings)
    try:
        for name in args.datasets:
            dataset = datasets.get(name) or public_dataset(name)
            items = sample(dataset, args.per_question, args.limit)
            found = report["runs"].setdefault(name, {})
            found["per_question"], found["limit"] = args.per_question, args.limit
            for key, shares in baselines(dataset, items, embedder).items():
                found[key] = agreement(items, shares)
            for mode in MODES:
                if mode in found:
                    continue
                run = grade(dataset, items, judge, mode)
                found[mode] = {**agreement(items, run.pop("shares")), **run}
                args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
                print(name, mode, found[mode], flush=True)
    finally:
        judge.close()


if __name__ == "__main__":
    main()
