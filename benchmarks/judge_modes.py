"""The two judge modes side by side in one run: the JSON verdict and the probability checks.

The same answers are graded twice through ``Pipeline.grade_many`` on ONE engine (the judge is
loaded once; its prefix cache is reset before each mode, so each starts cold), first in the
verdict mode, then in the probability mode, in batches as ``grader grade`` makes them. No
embedder and no scorer: this measures the judge's cost, not the scorer's. For each mode:
answers/s, seconds per answer, prompt tokens, prefix-cache hits, generated tokens, and how many
grades came out scored; the ratio of the two rates is measured in one run on one machine.

The answers: the hand-graded seed answers (both sets) to the 5-point questions of the seed
banks (``--questions``), instructor rubrics.

    python -m benchmarks.judge_modes --answers 24 --out benchmarks/results/judge_modes_cpu.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from benchmarks.common import ROOT, code_version
from grader.bank.files import load_bank
from grader.config import EmbeddingSettings, JudgeSettings, ScorerSettings, Settings, VllmSettings
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.judge import make_judge
from grader.judge.vllm_local import engine_dtype
from grader.models import Submission

BANK = ROOT / "rubrics" / "grad_accum_engineer.yaml"
DATA = [
    ROOT / "tests" / "data" / "seed_answers.jsonl",
    ROOT / "tests" / "data" / "seed_answers_2.jsonl",
]
QUESTIONS = "004-s5-q1,004-s5-q2,004-s5-q3,004-s5-q4"


def answers(questions: set[str], count: int) -> list[Submission]:
    """Every ``count``-th share of the seed answers to ``questions``, kinds mixed, in file order."""
    rows = [
        json.loads(line)
        for path in DATA
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    rows = [r for r in rows if r["question_id"] in questions]
    step = max(1, len(rows) // count)
    chosen = rows[::step][:count]
    return [
        Submission(id=r["id"], question_id=r["question_id"], answer=r["answer"]) for r in chosen
    ]


def run(mode: str, judge, submissions: list[Submission], batch: int) -> dict:
    settings = Settings(
        judge=JudgeSettings(backend="vllm", mode=mode),
        scorer=ScorerSettings(choice="none"),
        embeddings=EmbeddingSettings(model="none"),
    )
    bank = load_bank(BANK)
    pipeline = Pipeline(bank, load_rubrics(BANK, bank), judge, settings)
    judge.reset_prefix_cache()
    ordered = sorted(submissions, key=lambda s: s.question_id)
    started = time.perf_counter()
    grades = []
    for start in range(0, len(ordered), batch):
        grades += pipeline.grade_many(ordered[start : start + batch])
    wall = time.perf_counter() - started
    prompt = sum((g.provenance.prompt_tokens or 0) for g in grades)
    cached = sum((g.provenance.cached_tokens or 0) for g in grades)
    return {
        "mode": mode,
        "answers": len(grades),
        "scored": sum(g.score is not None for g in grades),
        "wall_s": round(wall, 2),
        "answers_per_s": round(len(grades) / wall, 4),
        "s_per_answer": round(wall / len(grades), 2),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "cached_share": round(cached / prompt, 3) if prompt else None,
        "generated_tokens": sum((g.provenance.completion_tokens or 0) for g in grades),
        "scores": {g.submission_id: g.score for g in grades},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=64, help="as grader grade batches")
    parser.add_argument("--questions", default=QUESTIONS)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--modes", default="verdict,probability", help="in this order")
    parser.add_argument("--dtype", default="auto", help="GRADER_VLLM_DTYPE for this run")
    args = parser.parse_args()

    submissions = answers(set(args.questions.split(",")), args.answers)
    settings = Settings(judge=JudgeSettings(backend="vllm", vllm=VllmSettings(dtype=args.dtype)))
    started = time.perf_counter()
    judge = make_judge(settings)
    load_s = time.perf_counter() - started
    try:
        results = [run(mode, judge, submissions, args.batch_size) for mode in args.modes.split(",")]
    finally:
        judge.close()
    rates = {r["mode"]: r["answers_per_s"] for r in results}
    report = {
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} CPUs",
        "model": settings.judge.model,
        "dtype": engine_dtype(settings.judge.vllm.dtype, torch.cuda.is_available()),
        "code": code_version("grader", "benchmarks"),
        "load_s": round(load_s, 1),
        "modes": results,
    }
    if {"verdict", "probability"} <= rates.keys():
        report["speedup_probability_over_verdict"] = round(
            rates["probability"] / rates["verdict"], 2
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(
        f"{'mode':<12} {'answers/s':>10} {'s/answer':>9} {'prompt':>8} {'cached':>7} {'generated':>10}"
    )
    for r in results:
        print(
            f"{r['mode']:<12} {r['answers_per_s']:>10.3f} {r['s_per_answer']:>9.2f} "
            f"{r['prompt_tokens']:>8} {r['cached_share']:>7} {r['generated_tokens']:>10}"
        )
    if "speedup_probability_over_verdict" in report:
        print(f"probability / verdict: {report['speedup_probability_over_verdict']}x")


if __name__ == "__main__":
    main()
