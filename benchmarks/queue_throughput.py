"""Throughput of the grading service: HTTP intake, Redis, Celery workers, SQLite.

Starts a redis-server, ``grader serve`` (uvicorn) and one ``grader worker --concurrency P``
(prefork) on this machine, waits until every pool process has loaded its graders and one
warm-up submission is graded, then posts the measured submissions in bulk requests of 200 and
times (a) intake — until every POST is answered 202 — and (b) end to end — until every
submission is graded. The worker runs through ``timed_worker.py``, which logs how long each
task, pipeline, embedding-signal and judge call took, so the judge's share of the time is
measured inside the worker, not inferred.

Scripted runs (``--processes``, ``--latency``, ``--batch-size``, ``--mix``): N submissions
(the example exam's answers cycled, 13 % subjective; or only its subjective answers, so every
task carries a judge batch), the scripted judge standing in for the model with ``--latency``
seconds per judge batch, no embedding model: the service's own overhead, and how it scales
with pool processes.

Real-judge run (``--real``): the embedded judge (``GRADER_JUDGE=vllm``, the packaged model)
and the embedding model in one pool process, on the example exam's answers (all objective
ones, and the subjective ones but those to the warm-up question), to measure the fraction of
end-to-end time spent outside the judge.

    python -m benchmarks.queue_throughput --n 2000 --processes 1 2 4 --latency 0 0.2 \
        --mix example subjective --out benchmarks/results/queue_throughput.json
    python -m benchmarks.queue_throughput --real --out benchmarks/results/queue_throughput_real.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.lib.common import ROOT, command
from grader.service.store import Store
from tests.integration.service import RedisServer, Worker, free_port, wait_for

EXAM = "grad_accum_engineer"
OBJECTIVE_SECTIONS = ("004-s1", "004-s2", "004-s3", "004-s4")
WARM_UP_QUESTION = "004-s6-q2"  # the real run warms up on it and leaves it out of the timing


class TimedWorker(Worker):
    """``Worker``, started through ``timed_worker.py``."""

    def __init__(self, env: dict[str, str], log: Path, concurrency: int):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.lib.timed_worker", "worker",
             "--concurrency", str(concurrency), "--pool", "prefork", "--loglevel", "INFO"],
            cwd=ROOT, env=env, stdout=log.open("a"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


class Service:
    """Redis, one API process and one worker with ``processes`` pool processes, in ``workdir``."""

    def __init__(self, workdir: Path, processes: int, settings: dict[str, str]):
        self.workdir, self.processes = workdir, processes
        self.timings = workdir / "timings.jsonl"
        self.redis = RedisServer(workdir)
        self.redis.start()
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "GRADER_DATABASE_URL": f"sqlite:///{workdir / 'grader.db'}",
            "GRADER_REDIS_URL": self.redis.url,
            "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / f"{EXAM}.yaml")]),
            "GRADER_BENCH_TIMINGS": str(self.timings),
            **settings,
        }
        add = subprocess.run(
            [sys.executable, "-m", "grader", "platform", "add", "bench", "--exam", EXAM],
            env=self.env, cwd=workdir, capture_output=True, text=True, check=True,
        )  # fmt: skip
        self.headers = {
            "Authorization": "Bearer "
            + next(x for x in add.stdout.splitlines() if x.startswith("api_key="))[8:]
        }
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.server = subprocess.Popen(
            [sys.executable, "-m", "grader", "serve", "--port", str(port)],
            env=self.env, cwd=workdir, stdout=(workdir / "serve.log").open("w"),
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.worker = TimedWorker(self.env, workdir / "worker.log", processes)
        self.store = Store(self.env["GRADER_DATABASE_URL"])
        self.client = httpx.Client(timeout=120)

    def wait_ready(self, timeout: float) -> float:
        """Until the API answers and every pool process has loaded its graders: the load time."""
        wait_for(self._up, 60, "the API")
        wait_for(lambda: len(self.steps("load")) >= self.processes, timeout, "the workers to load")
        return max(t["end"] - t["start"] for t in self.steps("load"))

    def post(self, items: list[dict]) -> None:
        for i in range(0, len(items), 200):
            r = self.client.post(
                f"{self.base}/v1/submissions", json=items[i : i + 200], headers=self.headers
            )
            r.raise_for_status()

    def wait_graded(self, n: int, timeout: float) -> None:
        wait_for(
            lambda: self.store.metrics.counts()["submissions"].get("graded", 0) >= n,
            timeout,
            f"{n} grades",
            0.05,
        )

    def steps(self, step: str, since: float = 0.0) -> list[dict]:
        if not self.timings.exists():
            return []
        lines = [json.loads(x) for x in self.timings.read_text().splitlines() if x]
        return [t for t in lines if t["step"] == step and t["start"] >= since]

    def grades(self) -> list:
        platform_id = self.store.accounts.platform_by_name("bench").id
        return [s.grade for s in self.store.intake.export(platform_id, EXAM) if s.grade is not None]

    def close(self) -> None:
        self.client.close()
        self.worker.stop()
        self.server.terminate()
        self.server.wait(20)
        self.redis.kill()

    def _up(self) -> bool:
        try:
            return httpx.get(f"{self.base}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False


def examples() -> list[dict]:
    path = ROOT / "examples" / f"{EXAM}.submissions.jsonl"
    return [json.loads(x) for x in path.open(encoding="utf-8")]


def submission(prefix: str, i: int, example: dict) -> dict:
    return {
        "id": f"{prefix}{i}",
        "exam": EXAM,
        "question_id": example["question_id"],
        "answer": example["answer"],
    }


def subjective(items: list[dict]) -> int:
    return sum(not x["question_id"].startswith(OBJECTIVE_SECTIONS) for x in items)


def busy(steps: list[dict]) -> float:
    return sum(t["end"] - t["start"] for t in steps)


def run_scripted(
    n: int, mix: str, processes: int, batch_size: int, latency: float, rounds: int, workdir: Path
) -> dict:
    """``rounds`` rounds of ``n`` fresh submissions, one after the other on one service; the
    median round is the result (other work on the machine makes single rounds noisy)."""
    service = Service(
        workdir,
        processes,
        {
            "GRADER_JUDGE": "scripted",
            "GRADER_EMBED_MODEL": "none",  # the service's own overhead, not the embedding model's
            "GRADER_SCRIPTED_LATENCY_S": str(latency),
            "GRADER_BATCH_SIZE": str(batch_size),
        },
    )
    try:
        service.wait_ready(60)
        pool = examples()
        service.post([submission("warm", 0, pool[0])])
        service.wait_graded(1, 60)
        if mix == "subjective":
            pool = [x for x in pool if not x["question_id"].startswith(OBJECTIVE_SECTIONS)]
        measured = []
        for k in range(rounds):
            items = [submission(f"r{k}-", i, pool[i % len(pool)]) for i in range(n)]
            start = time.time()
            service.post(items)
            intake = time.time() - start
            service.wait_graded(1 + n * (k + 1), 600)
            total = time.time() - start
            tasks, judge = service.steps("task", start), service.steps("judge", start)
            measured.append(
                {
                    "intake_s": round(intake, 2),
                    "intake_per_s": round(n / intake, 1),
                    "end_to_end_s": round(total, 2),
                    "graded_per_s": round(n / total, 1),
                    "tasks": len(tasks),
                    "judge_batches": len(judge),
                    "task_busy_s": round(busy(tasks), 2),
                    "judge_busy_s": round(busy(judge), 2),
                }
            )
        median = sorted(measured, key=lambda r: r["graded_per_s"])[len(measured) // 2]
        return {
            "n": n, "mix": mix, "subjective": subjective(items), "processes": processes,
            "batch_size": batch_size, "latency_s": latency, **median,
            "graded_per_s_rounds": [r["graded_per_s"] for r in measured],
        }  # fmt: skip
    finally:
        service.close()


def run_real(batch_size: int, kv_cache_gib: int, workdir: Path) -> dict:
    """One pool process with the embedded judge and the embedding model, timed after warm-up."""
    service = Service(
        workdir,
        1,
        {
            "GRADER_JUDGE": "vllm",
            "GRADER_VLLM_KV_CACHE_GIB": str(kv_cache_gib),
            "GRADER_BATCH_SIZE": str(batch_size),
        },
    )
    try:
        load = service.wait_ready(600)
        pool = examples()
        warm = next(x for x in pool if x["question_id"] == WARM_UP_QUESTION)
        started = time.time()
        service.post([submission("warm", 0, warm)])  # first model call, embedding model load
        service.wait_graded(1, 300)
        warm_up = time.time() - started
        items = [
            submission("r", i, x)
            for i, x in enumerate(pool)
            if x["question_id"] != WARM_UP_QUESTION
        ]
        start = time.time()
        service.post(items)
        intake = time.time() - start
        service.wait_graded(len(items) + 1, 900)
        total = time.time() - start
        return {
            "n": len(items),
            "subjective": subjective(items),
            "processes": 1,
            "batch_size": batch_size,
            "kv_cache_gib": kv_cache_gib,
            "load_s": round(load, 1),
            "warm_up_s": round(warm_up, 1),
            "intake_s": round(intake, 2),
            "end_to_end_s": round(total, 2),
            "graded_per_s": round(len(items) / total, 2),
            **breakdown(service, start, total),
            **judged(service.grades(), {x["id"] for x in items}),
        }
    finally:
        service.close()


def breakdown(service: Service, start: float, total: float) -> dict:
    """Where the end-to-end time went, from the worker's own timings (one process: serial)."""
    task, many = service.steps("task", start), service.steps("grade_many", start)
    signals, judge = service.steps("signals", start), service.steps("judge", start)
    seconds = {
        "judge": busy(judge),
        "embedding_signals": busy(signals),
        "pipeline_rest": busy(many) - busy(judge) - busy(signals),
        "store_and_task": busy(task) - busy(many),
        "outside_tasks": total - busy(task),  # HTTP, gathering, Redis, Celery, polling
    }
    return {
        "judge_batches": [t["items"] for t in judge],
        "tasks": [t["items"] for t in task],
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "share_of_end_to_end": {k: round(v / total, 3) for k, v in seconds.items()},
        "outside_judge_share": round(1 - busy(judge) / total, 3),
    }


def judged(grades: list, ids: set[str]) -> dict:
    """What the grades say of the judge: a cross-check of the worker's timings.

    ``provenance.latency_s`` is the wall time of the judge calls that carried the answer,
    divided among the batch's requests (vLLM backend), so its sum over distinct answers is
    about the judge's time; a verdict shared by identical answers would be counted twice.
    """
    mine = [g for g in grades if g.submission_id in ids and g.provenance.latency_s]
    return {
        "judged": len(mine),
        "model": mine[0].provenance.model if mine else None,
        "provenance_latency_sum_s": round(sum(g.provenance.latency_s for g in mine), 2),
        "prompt_tokens": sum(g.provenance.prompt_tokens for g in mine),
        "cached_tokens": sum(g.provenance.cached_tokens for g in mine),
        "completion_tokens": sum(g.provenance.completion_tokens for g in mine),
        "attempts": sum(g.provenance.attempts for g in mine),
        "statuses": {s: sum(g.status == s for g in grades) for s in {g.status for g in grades}},
    }


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m benchmarks.queue_throughput", description=__doc__.splitlines()[0]
    )
    found.add_argument("--n", type=int, default=2000)
    found.add_argument("--processes", type=int, nargs="+", default=[2])
    found.add_argument("--batch-size", type=int, nargs="+", default=[32])
    found.add_argument("--latency", type=float, nargs="+", default=[0.0])
    found.add_argument(
        "--mix",
        nargs="+",
        choices=["example", "subjective"],
        default=["example"],
        help="example: the example exam's answers cycled; subjective: only its subjective ones",
    )
    found.add_argument("--rounds", type=int, default=3, help="scripted: rounds per setting")
    found.add_argument("--real", action="store_true", help="the embedded judge, one process")
    found.add_argument("--kv-cache-gib", type=int, default=2)
    found.add_argument("--out", type=Path)
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    results = []
    if args.real:
        with tempfile.TemporaryDirectory() as tmp:
            results.append(run_real(args.batch_size[0], args.kv_cache_gib, Path(tmp)))
        print(json.dumps(results[-1]))
    else:
        for mix, latency, size, processes in itertools.product(
            args.mix, args.latency, args.batch_size, args.processes
        ):
            with tempfile.TemporaryDirectory() as tmp:
                results.append(
                    run_scripted(args.n, mix, processes, size, latency, args.rounds, Path(tmp))
                )
            print(json.dumps(results[-1]))
    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "date": time.strftime("%Y-%m-%d"),
        "command": command(),
        "commit": commit(),
        "service": "1 uvicorn process; 1 `grader worker --concurrency P` (prefork); "
        "a local redis-server (AOF); SQLite (WAL)",
        "results": results,
    }
    if not args.real:
        report["speedup_vs_1_process"] = speedups(results)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")


def speedups(results: list[dict]) -> list[dict]:
    """graded/s with P processes over graded/s with 1, same batch size and latency."""
    one = {(r["mix"], r["batch_size"], r["latency_s"]): r for r in results if r["processes"] == 1}
    return [
        {
            "mix": r["mix"],
            "batch_size": r["batch_size"],
            "latency_s": r["latency_s"],
            "processes": r["processes"],
            "speedup": round(r["graded_per_s"] / base["graded_per_s"], 2),
        }
        for r in results
        if (base := one.get((r["mix"], r["batch_size"], r["latency_s"]))) and r["processes"] != 1
    ]


def commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout

    dirty = " (dirty)" if git("status", "--porcelain").strip() else ""
    return git("rev-parse", "--short", "HEAD").strip() + dirty


if __name__ == "__main__":
    main()
