"""How fast the judge grades: its plans and modes end to end, and what batching, the prefix
cache and structured output buy per request.

``--plans budget,full[,anchored]``: the judge plans end to end (``Pipeline.grade_many``, e5,
the shipped scorer), seconds per Chinese and English answer, each plan on the same answers
(``lib/judge_runs.py``). ``--modes verdict,probability``: the two judge modes on one engine,
seconds per answer and prompt tokens (no embedder, no scorer). Without either, the
request-level configurations below.

The request-level configurations: one run measures, on the same answers and with the output length fixed (``--max-tokens`` and
``--min-tokens``, so every configuration generates the same number of tokens):

- ``cache_on/structured/bN``: the production setting — rubric-first prompts, prefix caching
  on, JSON-schema decoding — for each batch size N in ``--batch-sizes`` (1 = one request at a
  time, the others = that many requests per ``complete`` call);
- ``cache_on/free/bN``: the same prompts decoded without the schema, at the largest batch size;
- ``cache_off/structured/bN``: a second engine with prefix caching off, at the smallest and
  largest batch sizes (vLLM turns the cache on or off per engine, so the first engine is shut
  down and its memory released before the second loads).

The prefix cache is reset before each configuration, so every one starts cold and pays for
its first rubric prefix. For each: gradings/s, prompt and generated tokens/s, p50/p95 latency
(a request's latency is the wall time of the ``complete`` call that carried it: what a caller
waits for its verdict), the prefix-cache hit rate (cached / prompt tokens) and how many
replies parse as verdicts (with a fixed length, a truncated verdict is expected and is not a
failure of the run). The ratios batched/sequential, cache on/off and structured on/off come
from this one run, so they compare like with like even on a busy machine.

The answers are real: ``--data seed`` takes the hand-graded seed answers and the example
submissions to the questions in ``--questions`` (instructor rubrics, long Chinese prompts);
``--data mohler`` takes Mohler answers (short English prompts, enough answers for GPU batch
sizes). On CUDA, ``--model`` is any local model folder; with ``--load-format dummy`` vLLM gives
it random weights (a folder with config.json and a tokenizer is enough: see
``benchmarks/lib/dummy_model.py``), for throughput when no weights are at hand.

    python -m benchmarks.judge_throughput --plans budget,full --answers 4 --repeats 2
    python -m benchmarks.judge_throughput --modes verdict,probability --answers 20
    python -m benchmarks.judge_throughput --answers 16 --batch-sizes 1,4,16

Every run prints its report, or writes it to ``--out`` (the request-level one after each
configuration, so a run cut short by a time limit keeps what it measured).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.lib.common import code_version, command, write_result
from benchmarks.lib.judge_answers import DEFAULT_QUESTIONS, ids, mohler_items, seed_items
from benchmarks.lib.judge_runs import main_modes, main_plans
from benchmarks.lib.splits import add_data_dir, use_data_dir
from grader.config import JudgeSettings, OpenAISettings, Settings, VllmSettings
from grader.engine.judging.prompts import judge_messages, judge_prompt
from grader.engine.judging.verdict import parse_verdict, verdict_schema
from grader.errors import JudgeProtocolError
from grader.judge import make_judge
from grader.judge.base import Judge, JudgeRequest
from grader.models import Question, Rubric


def build_requests(
    items: list[tuple[Question, Rubric, str]], count: int, max_tokens: int, min_tokens: int
) -> list[JudgeRequest]:
    if len(items) < count:
        raise SystemExit(f"only {len(items)} answers available, --answers asks for {count}")
    requests = []
    for k, (question, rubric, answer) in enumerate(items[:count]):
        prompt = judge_prompt(question.language)
        requests.append(
            JudgeRequest(
                id=f"a{k}",
                group=f"{question.id}@{rubric.version}+{prompt.version}",
                messages=judge_messages(prompt, question, rubric, answer, rubric.anchors),
                json_schema=verdict_schema(rubric),
                rubric=rubric,
                answer=answer,
                max_tokens=max_tokens,
                min_tokens=min_tokens,
            )
        )
    return requests


# --- measuring -------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), without numpy."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def measure(judge: Judge, requests: list[JudgeRequest], batch_size: int, structured: bool) -> dict:
    """Run ``requests`` in calls of ``batch_size``; throughput, latency and cache figures."""
    sent = [r.model_copy(update={"structured_output": structured}) for r in requests]
    latencies: list[float] = []
    completions = []
    started = time.monotonic()
    for start in range(0, len(sent), batch_size):
        batch = sent[start : start + batch_size]
        call_started = time.monotonic()
        completions.extend(judge.complete(batch))
        latencies.extend([time.monotonic() - call_started] * len(batch))
    wall = time.monotonic() - started

    prompt = sum(c.prompt_tokens for c in completions)
    generated = sum(c.completion_tokens for c in completions)
    cached = [c.cached_tokens for c in completions if c.cached_tokens is not None]
    errors = [c.error for c in completions if c.error]
    return {
        "batch_size": batch_size,
        "structured_output": structured,
        "requests": len(sent),
        "wall_s": round(wall, 3),
        "gradings_per_s": round(len(sent) / wall, 4),
        "prompt_tokens_per_s": round(prompt / wall, 2),
        "generated_tokens_per_s": round(generated / wall, 2),
        "latency_p50_s": round(percentile(latencies, 0.5), 3),
        "latency_p95_s": round(percentile(latencies, 0.95), 3),
        "prompt_tokens": prompt,
        "generated_tokens": generated,
        "cached_tokens": sum(cached) if cached else None,
        "prefix_cache_hit_rate": round(sum(cached) / prompt, 4) if cached and prompt else None,
        "valid_verdicts": sum(_parses(c.text, r) for c, r in zip(completions, sent, strict=True)),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
    }


def _parses(text: str | None, request: JudgeRequest) -> bool:
    try:
        parse_verdict(text or "", request.rubric)
    except JudgeProtocolError:
        return False
    return True


def _reset_cache(judge: Judge) -> None:
    reset = getattr(judge, "reset_prefix_cache", None)  # in-process vLLM only
    if callable(reset):
        reset()


def run_engine(
    settings: Settings,
    label: str,
    plan: list[tuple[int, bool]],
    requests: list[JudgeRequest],
    results: dict,
    engines: dict,
    save: Callable[[], None],
) -> None:
    """Load one engine, warm it up, run ``plan`` (batch size, structured) on it, shut it down.

    Each configuration lands in ``results`` and is saved at once, so a run cut short by a
    time limit (a borrowed GPU) still leaves every figure measured so far.
    """
    started = time.monotonic()
    judge = make_judge(settings)
    engines[label] = {"model_load_s": round(time.monotonic() - started, 2)}
    try:
        # Pays one-off costs (grammar compilation, first-call allocation) outside the figures.
        judge.complete([requests[0].model_copy(update={"max_tokens": 8, "min_tokens": 0})])
        for batch_size, structured in plan:
            _reset_cache(judge)
            name = f"{label}/{'structured' if structured else 'free'}/b{batch_size}"
            results[name] = measure(judge, requests, batch_size, structured)
            row = results[name]
            print(
                f"[throughput] {name}: {row['gradings_per_s']} gradings/s, "
                f"{row['generated_tokens_per_s']} gen tok/s, p50 {row['latency_p50_s']} s, "
                f"cache hits {row['prefix_cache_hit_rate']}",
                flush=True,
            )
            save()
    finally:
        judge.close()
        del judge
        gc.collect()


def ratios(results: dict, smallest: int, largest: int) -> dict:
    """The headline comparisons, each between two configurations of this run."""

    def rate(name: str) -> float | None:
        row = results.get(name)
        return row["gradings_per_s"] if row else None

    def ratio(a: str, b: str) -> float | None:
        x, y = rate(a), rate(b)
        return round(x / y, 3) if x and y else None

    on, off = "cache_on/structured", "cache_off/structured"
    return {
        f"batched_vs_sequential (b{largest}/b{smallest}, cache on)": ratio(
            f"{on}/b{largest}", f"{on}/b{smallest}"
        ),
        f"batched_vs_sequential (b{largest}/b{smallest}, cache off)": ratio(
            f"{off}/b{largest}", f"{off}/b{smallest}"
        ),
        f"cache_on_vs_off (b{largest})": ratio(f"{on}/b{largest}", f"{off}/b{largest}"),
        f"cache_on_vs_off (b{smallest})": ratio(f"{on}/b{smallest}", f"{off}/b{smallest}"),
        f"structured_vs_free (b{largest}, cache on)": ratio(
            f"{on}/b{largest}", f"cache_on/free/b{largest}"
        ),
        f"production_vs_naive (b{largest} cache on / b{smallest} cache off)": ratio(
            f"{on}/b{largest}", f"{off}/b{smallest}"
        ),
    }


# --- the report ------------------------------------------------------------------------------


def machine() -> dict:
    info = {"platform": platform.platform(), "python": platform.python_version()}
    info["cpus"] = os.cpu_count()
    with contextlib.suppress(ImportError):
        import torch

        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
        import vllm

        info["vllm"] = vllm.__version__
    return info


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m benchmarks.judge_throughput", description=__doc__.split("\n\n")[0]
    )
    found.add_argument("--out", type=Path, help="write the JSON report here (else: printed)")
    what = found.add_mutually_exclusive_group()
    what.add_argument(
        "--plans",
        help="e.g. budget,full: the judge plans end to end; --answers per language (seed "
        "--questions in Chinese, Mohler answers in English)",
    )
    what.add_argument(
        "--modes", help="e.g. verdict,probability: the judge modes on one engine, in this order"
    )
    found.add_argument("--repeats", type=int, default=1, help="rounds of the plans (--plans)")
    found.add_argument(
        "--backend",
        choices=("vllm", "openai", "scripted"),
        default="vllm",
        help="scripted: no model, checks the script itself in seconds",
    )
    found.add_argument(
        "--model",
        default=JudgeSettings.model_fields["model"].default,
        help="packaged model name or a local model folder (vllm); the server's model (openai)",
    )
    found.add_argument(
        "--load-format", default="auto", help='vLLM load format; "dummy" = random weights'
    )
    found.add_argument("--dtype", default="auto", help="vLLM dtype (GRADER_VLLM_DTYPE)")
    found.add_argument("--data", choices=("seed", "mohler"), default="seed")
    found.add_argument(
        "--questions",
        default=None,
        help=f"comma-separated question ids, or 'all' (seed default: {DEFAULT_QUESTIONS};"
        " mohler default: all)",
    )
    found.add_argument("--answers", type=int, default=16, help="answers graded per config")
    found.add_argument("--batch-sizes", default="1,4,16", help="comma-separated, e.g. 1,4,16")
    found.add_argument("--max-tokens", type=int, default=48, help="generated tokens, at most")
    found.add_argument(
        "--min-tokens", type=int, default=48, help="generated tokens, at least (= max: fixed)"
    )
    found.add_argument(
        "--no-cache-off", action="store_true", help="skip the second engine (prefix cache off)"
    )
    found.add_argument(
        "--enforce-eager",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="no CUDA graphs / compilation: loads much faster, decodes slower on GPU",
    )
    found.add_argument("--max-model-len", type=int, default=4096)
    found.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    add_data_dir(found)
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    use_data_dir(args)
    vllm = {
        "load_format": args.load_format,
        "max_model_len": args.max_model_len,
        "enforce_eager": args.enforce_eager,
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "dtype": args.dtype,
    }
    openai = OpenAISettings(**({"model": args.model} if args.backend == "openai" else {}))

    def judged(prefix_caching: bool) -> Settings:
        engine = VllmSettings(**vllm, enable_prefix_caching=prefix_caching)
        return Settings(
            judge=JudgeSettings(backend=args.backend, model=args.model, vllm=engine, openai=openai)
        )

    if args.plans:
        return main_plans(args, judged(prefix_caching=True), machine())
    if args.modes:
        return main_modes(args, judged(prefix_caching=True), machine())
    requests_level(args, judged)


def requests_level(args: argparse.Namespace, judged: Callable[[bool], Settings]) -> None:
    """The request-level configurations: batch sizes, structured or free, cache on or off."""
    sizes = sorted({int(s) for s in args.batch_sizes.split(",")})
    if args.min_tokens > args.max_tokens:
        raise SystemExit("--min-tokens cannot exceed --max-tokens")
    if args.data == "seed":
        chosen = None if args.questions == "all" else ids(args.questions or DEFAULT_QUESTIONS)
        items = seed_items(chosen)
    else:
        chosen = None if args.questions in (None, "all") else ids(args.questions)
        items = mohler_items(chosen, args.answers)
    requests = build_requests(items, args.answers, args.max_tokens, args.min_tokens)

    smallest, largest = sizes[0], sizes[-1]
    plan_on = [(b, True) for b in sizes] + [(largest, False)]
    results: dict = {}
    engines: dict = {}
    context = {
        "benchmark": "judge_throughput",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command(),
        "machine": machine(),
        "code": code_version("grader", "prompts", __file__),
        "backend": args.backend,
        "model": args.model,
        "load_format": args.load_format,
        "enforce_eager": args.enforce_eager,
        "data": args.data,
        "questions": sorted({r.group.split("@")[0] for r in requests}),
        "answers": len(requests),
        "max_tokens": args.max_tokens,
        "min_tokens": args.min_tokens,
    }

    def report() -> dict:
        return {
            **context,
            "mean_prompt_tokens": round(
                statistics.fmean(row["prompt_tokens"] for row in results.values()) / len(requests),
                1,
            ),
            "engines": engines,
            "ratios": ratios(results, smallest, largest),
            "configurations": results,
        }

    def save() -> None:
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(report(), ensure_ascii=False, indent=2) + "\n"
            args.out.write_text(text, encoding="utf-8")

    run_engine(judged(True), "cache_on", plan_on, requests, results, engines, save)
    if args.backend == "vllm" and not args.no_cache_off:
        plan_off = [(b, True) for b in sorted({smallest, largest})]
        run_engine(judged(False), "cache_off", plan_off, requests, results, engines, save)
    if args.out:
        print(json.dumps(report()["ratios"], indent=2))
    write_result(report(), args.out)


if __name__ == "__main__":
    main()
