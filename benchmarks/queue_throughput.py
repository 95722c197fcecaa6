"""Throughput of the grading service: HTTP intake, Redis, Celery workers, SQLite.

Starts a redis-server, ``grader serve`` (uvicorn) and one ``grader worker`` (2 processes) on
this machine, posts N submissions (the example exam's answers, cycled) in bulk requests of 200,
and times (a) intake — until every POST is answered 202 — and (b) end to end — until every
submission is graded. The scripted judge stands in for the model: ``--latency`` seconds per
judge batch, so batch size shows how much per-batch model time batching saves.

    python benchmarks/queue_throughput.py --n 2000 --batch-size 32 --latency 0.2 \
        --out benchmarks/results/queue_throughput.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.store import Store  # noqa: E402
from tests.integration.service import RedisServer, Worker, free_port, wait_for  # noqa: E402

EXAM = "grad_accum_engineer"


def run(n: int, batch_size: int, latency: float, workdir: Path) -> dict:
    redis = RedisServer(workdir)
    redis.start()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GRADER_DATABASE_URL": f"sqlite:///{workdir / 'grader.db'}",
        "GRADER_REDIS_URL": redis.url,
        "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / f"{EXAM}.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",  # the service's own overhead, not the embedding model's
        "GRADER_SCRIPTED_LATENCY_S": str(latency),
        "GRADER_BATCH_SIZE": str(batch_size),
    }
    add = subprocess.run(
        [sys.executable, "-m", "grader", "platform", "add", "bench", "--exam", EXAM],
        env=env, cwd=workdir, capture_output=True, text=True, check=True,
    )  # fmt: skip
    key = next(x for x in add.stdout.splitlines() if x.startswith("api_key="))[8:]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "grader", "serve", "--port", str(port)],
        env=env, cwd=workdir, stdout=(workdir / "serve.log").open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    worker = Worker(env, workdir / "worker.log")
    store = Store(env["GRADER_DATABASE_URL"])
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _up(base), 60, "the API")
        time.sleep(5)  # let the worker load its banks and judge
        examples = [json.loads(x) for x in (ROOT / "examples" / f"{EXAM}.submissions.jsonl").open()]
        items = [
            {"id": f"b{i}", "exam": EXAM, "question_id": examples[i % len(examples)]["question_id"],
             "answer": examples[i % len(examples)]["answer"]}
            for i in range(n)
        ]  # fmt: skip
        subjective = sum(
            not x["question_id"].startswith(("004-s1", "004-s2", "004-s3", "004-s4")) for x in items
        )
        headers = {"Authorization": f"Bearer {key}"}
        start = time.monotonic()
        with httpx.Client(timeout=60) as client:
            for i in range(0, n, 200):
                r = client.post(f"{base}/v1/submissions", json=items[i : i + 200], headers=headers)
                r.raise_for_status()
        intake = time.monotonic() - start
        wait_for(
            lambda: store.counts()["submissions"].get("graded", 0) == n, 600, "all grades", 0.05
        )
        total = time.monotonic() - start
        return {
            "n": n, "subjective": subjective, "batch_size": batch_size, "latency_s": latency,
            "intake_s": round(intake, 2), "intake_per_s": round(n / intake, 1),
            "end_to_end_s": round(total, 2), "graded_per_s": round(n / total, 1),
        }  # fmt: skip
    finally:
        worker.stop()
        server.terminate()
        server.wait(20)
        redis.kill()


def _up(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, nargs="+", default=[32])
    parser.add_argument("--latency", type=float, nargs="+", default=[0.0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = []
    for latency in args.latency:
        for size in args.batch_size:
            with tempfile.TemporaryDirectory() as tmp:
                result = run(args.n, size, latency, Path(tmp))
            print(json.dumps(result))
            results.append(result)
    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "date": time.strftime("%Y-%m-%d"),
        "command": " ".join(sys.argv),
        "workers": "1 worker, prefork, 2 processes; API: 1 uvicorn process; SQLite (WAL)",
        "results": results,
    }
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
