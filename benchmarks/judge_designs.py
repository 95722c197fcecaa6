"""Which judge design gives the embedded judge real signal when it scores by probability.

Issue 12, measurement half. Each design asks the judge one or more single-token questions per
answer (``SamplingParams(max_tokens=1, logprobs=20, temperature=0)``, one ``LLM.chat`` call
per design and data set, requests sorted so those sharing a prefix are adjacent), reads the
first token's top-20 logprobs and renormalises them over the allowed labels (the mass that
fell on the labels is recorded). Designs and prompts: ``judge_design_prompts.py``.

Data: development parts only (``splits.py``); no figure is ever computed on a test part.
Sample rule (fixed on 2026-12-03, before any design was run):
- Mohler dev (41 questions): answers that are not blank by the production rule
  (``blank_reason(answer, 2)``), per question sorted by
  ``sha256("judge-designs-v1:mohler:" + question_id + ":" + answer id)``, the first 4 (164).
- ADS dev (15 questions): the same rule with ``"ads"`` and the first 10 per question (150).
  Reference: ``reference1`` (the judge and the cosine see the same one).
- Seed answers: all of ``tests/data/seed_answers.jsonl`` except the blank one (39), with the
  instructor rubrics of ``rubrics/``. Public sets use ``derive_rubric`` (D2) and
  ``key_points_of(reference)`` (D1, D6), as a freshly imported paper would.
- Graded neighbours (D5, D7n and the kNN baseline): the other development answers of the same
  question (seed: the other seed answers), never the answer itself nor an identical text
  (whitespace/case-normalised), nearest first by e5 cosine.
Scores are compared as fractions of each question's maximum.

    python -m benchmarks.judge_designs prepare                  # e5 signals, no lock needed
    flock /tmp/grader-heavy.lock python -m benchmarks.judge_designs run --run battery --dataset ads
    python -m benchmarks.judge_designs report                   # table + summary.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import time
from pathlib import Path

from benchmarks.common import code_version, command
from benchmarks.judge_design_prompts import DESIGNS, RUNS, Request, design_of, score

RESULTS = Path(__file__).resolve().parent / "results" / "judge_designs"
SAMPLES = RESULTS / "samples.json.gz"
DATASETS = ("mohler", "ads", "seed")
MODELS = {"1.5b": "qwen2.5-coder-1.5b-instruct", "0.5b": "qwen2.5-coder-0.5b-instruct"}


def prepare() -> None:
    from benchmarks.judge_design_data import build_samples
    from grader.embed import Embedder

    samples = build_samples(Embedder())
    RESULTS.mkdir(parents=True, exist_ok=True)
    SAMPLES.write_bytes(gzip.compress(json.dumps(samples, ensure_ascii=False).encode()))
    for name, cases in samples.items():
        print(f"{name}: {len(cases)} answers, {len({c['question_id'] for c in cases})} questions")


def load_llm(model: str, batched_tokens: int, dtype: str):
    """The judge engine as production configures it on CPU, with smaller scheduler steps.

    ``max_num_batched_tokens`` (vLLM's default 4096) bounds one engine step: on one busy CPU
    core a 4096-token step overran vLLM's 300 s ``execute_model`` timeout and killed the engine.
    ``dtype``: this machine's CPU (AMD EPYC, AVX2, no AVX-512/AMX) multiplies bfloat16 about 6x
    slower than float32 (one thread, 256x1536 @ 1536x8960: 6.5 vs 41 GFLOP/s), so float32 is
    the default here; bfloat16 is what production configures.
    """
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "3")
    os.environ.setdefault("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "1800")
    from vllm import LLM

    from grader.packaged import prepare_model

    path = prepare_model(model, Path.home() / ".cache" / "grader" / "models")
    started = time.monotonic()
    llm = LLM(
        model=str(path),
        dtype=dtype,
        enforce_eager=True,
        enable_prefix_caching=True,
        block_size=32,
        max_model_len=4096,
        max_num_batched_tokens=batched_tokens,
        seed=0,
    )
    return llm, round(time.monotonic() - started, 1)


def label_ids(tokenizer, requests: list[Request]) -> dict[str, int]:
    """Token id of every label string; refuses any label that is not exactly one token."""
    ids = {}
    for text in sorted({s for r in requests for alias in r.labels.values() for s in alias}):
        tokens = tokenizer.encode(text, add_special_tokens=False)
        if len(tokens) != 1:
            raise SystemExit(f"label {text!r} is {len(tokens)} tokens {tokens}, not one")
        ids[text] = tokens[0]
    return ids


def ask(llm, requests: list[Request]) -> tuple[list[dict], float]:
    """All requests in one engine call, prefix-sharing ones adjacent; parts in request order."""
    from vllm import SamplingParams

    ids = label_ids(llm.get_tokenizer(), requests)
    order = sorted(range(len(requests)), key=lambda i: (requests[i].system, requests[i].user))
    messages = [
        [
            {"role": "system", "content": requests[i].system},
            {"role": "user", "content": requests[i].user},
        ]
        for i in order
    ]
    params = SamplingParams(max_tokens=1, logprobs=20, temperature=0)
    started = time.monotonic()
    outputs = llm.chat(messages, params, use_tqdm=False)
    wall = time.monotonic() - started
    parts: list[dict] = [{}] * len(requests)
    for i, out in zip(order, outputs, strict=True):
        parts[i] = _part(requests[i], out, ids)
    return parts, wall, ids


def _part(request: Request, out, ids: dict[str, int]) -> dict:
    generated = out.outputs[0]
    top = generated.logprobs[0] if generated.logprobs else {}
    raw = {
        label: sum(math.exp(top[ids[s]].logprob) for s in alias if ids[s] in top)
        for label, alias in request.labels.items()
    }
    mass = sum(raw.values())
    n = len(raw)
    probs = {lab: (p / mass if mass > 0 else 1 / n) for lab, p in raw.items()}
    return {
        "part": request.part,
        "probs": {k: round(v, 5) for k, v in probs.items()},
        "mass": round(mass, 5),
        "top_token": generated.text,
        "values": request.values,
        "weight": request.weight,
        "info": request.info,
        "prompt_tokens": len(out.prompt_token_ids or []),
        "cached_tokens": out.num_cached_tokens or 0,
    }


def run_one(
    llm, model_tag: str, run_name: str, dataset: str, cases: list[dict], meta: dict
) -> dict:
    per_case = [RUNS[run_name](c) for c in cases]
    requests = [r for rs in per_case for r in rs]
    llm.reset_prefix_cache()  # every run starts cold
    print(f"{time.strftime('%H:%M:%S')} {run_name} {dataset}: {len(requests)} requests", flush=True)
    parts, wall, label_tokens = ask(llm, requests)
    rows, at = [], 0
    for case, rs in zip(cases, per_case, strict=True):
        mine = parts[at : at + len(rs)]
        at += len(rs)
        by_design: dict[str, list[dict]] = {}
        for part in mine:
            by_design.setdefault(design_of(part["part"]), []).append(part)
        rows.append(
            {
                "id": case["id"],
                "question_id": case["question_id"],
                "score": case["score"],
                "max_score": case["max_score"],
                "judge": {d: round(score(d, case, ps), 5) for d, ps in by_design.items()},
                "parts": mine,
            }
        )
    prompt = sum(p["prompt_tokens"] for p in parts)
    cached = sum(p["cached_tokens"] for p in parts)
    return {
        **meta,
        "run": run_name,
        "designs": {d: DESIGNS[d] for d in rows[0]["judge"]},
        "dataset": dataset,
        "model": model_tag,
        "answers": len(cases),
        "requests": len(requests),
        "wall_s": round(wall, 2),
        "s_per_answer": round(wall / len(cases), 3),
        "prompt_tokens_per_answer": round(prompt / len(cases), 1),
        "new_tokens_per_answer": round((prompt - cached) / len(cases), 1),
        "cached_share": round(cached / prompt, 4) if prompt else None,
        "label_token_ids": label_tokens,  # each label string checked to be exactly one token
        "rows": rows,
    }


def _path(model_tag: str, run_name: str, dataset: str, part, limit: int) -> Path:
    name = f"{run_name}.{dataset}"
    if part:
        name += f".p{part[0]}of{part[1]}"
    if limit:
        name += f".limit{limit}"
    return RESULTS / model_tag / f"{name}.json"


def chunk(cases: list[dict], index: int, count: int) -> list[dict]:
    """Part ``index`` of ``count``: whole questions, in sample order, about equal in answers."""
    bounds = [round(i * len(cases) / count) for i in range(count + 1)]
    questions = []
    for case in cases:
        if case["question_id"] not in questions:
            questions.append(case["question_id"])
    first = {q: min(i for i, c in enumerate(cases) if c["question_id"] == q) for q in questions}
    # a question belongs to the part its first answer falls in
    mine = {q for q in questions if bounds[index - 1] <= first[q] < bounds[index]}
    return [c for c in cases if c["question_id"] in mine]


def run(
    runs: list[str],
    datasets: list[str],
    model_tag: str,
    force: bool,
    limit: int,
    step: int,
    dtype: str,
    part: tuple[int, int] | None,
) -> None:
    samples = json.loads(gzip.decompress(SAMPLES.read_bytes()))
    todo = [
        (r, s)
        for r in runs
        for s in datasets
        if force or not _path(model_tag, r, s, part, limit).exists()
    ]
    if not todo:
        print("nothing to do (results exist; --force reruns)")
        return
    llm, load_s = load_llm(MODELS[model_tag], step, dtype)
    meta = {
        "machine": f"{os.cpu_count()} CPU cores (AVX2), vllm-cpu 0.32, eager, prefix caching, block 32",
        "date": time.strftime("%Y-%m-%d"),
        "command": command(),
        "code": code_version("benchmarks/judge_designs.py", "benchmarks/judge_design_prompts.py"),
        "model_load_s": load_s,
        "max_num_batched_tokens": step,
        "dtype": dtype,
    }
    for run_name, dataset in todo:
        cases = samples[dataset][:limit] if limit else samples[dataset]
        if part:
            cases = chunk(cases, *part)
        result = run_one(llm, model_tag, run_name, dataset, cases, meta)
        path = _path(model_tag, run_name, dataset, part, limit)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
        print(
            f"{run_name} {dataset}: {result['s_per_answer']} s/answer, "
            f"{result['prompt_tokens_per_answer']} prompt tok/answer, cached {result['cached_share']}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("prepare", help="build samples.json.gz with the e5 signals (no vLLM)")
    r = sub.add_parser("run", help="run designs on data sets (under the heavy lock)")
    r.add_argument("--run", action="append", choices=sorted(RUNS), required=True)
    r.add_argument("--dataset", action="append", choices=DATASETS, required=True)
    r.add_argument("--model", choices=sorted(MODELS), default="1.5b")
    r.add_argument("--force", action="store_true")
    r.add_argument("--limit", type=int, default=0, help="first N answers only (smoke test)")
    r.add_argument("--step-tokens", type=int, default=1024, help="max_num_batched_tokens")
    r.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    r.add_argument("--part", default="", help="I/N: only the I-th of N parts (whole questions)")
    sub.add_parser("report", help="figures for every result, written to summary.json")
    args = parser.parse_args()
    if args.command == "prepare":
        prepare()
    elif args.command == "run":
        run(
            args.run,
            args.dataset,
            args.model,
            args.force,
            args.limit,
            args.step_tokens,
            args.dtype,
            tuple(int(x) for x in args.part.split("/")) if args.part else None,
        )
    else:
        from benchmarks.judge_design_report import report

        report(RESULTS)


if __name__ == "__main__":
    main()
