"""A hostile platform next to a normal one: how much the normal platform's POST latency
suffers while the other posts the worst inputs the intake accepts a connection for.

Starts ``grader serve --inline`` (uvicorn, the scripted judge, no embedding model, SQLite)
with two platforms. The normal platform posts one submission at a time (the example exam's
answers cycled) and times each POST. Phase 1: it alone. Phase 2: the same while the hostile
platform, on its own threads, keeps posting
  - ``list``: an 8 MiB body ``[[],[],…]`` (about 2.8 million elements; refused 413),
  - ``object``: an 8 MiB body of one JSON object with ~600,000 keys (refused 422),
  - ``slow``: ``--slow`` connections sending a request head one byte a second (closed by the
    server after ``GRADER_REQUEST_HEADER_TIMEOUT_S``; reopened at once),
  - with ``--kinds … answers``: bulk posts of answers that were pathological for the text handling
    (catastrophic backtracking and quadratic scans, at sizes that took seconds, not days,
    before their fixes).
The figure is the ratio of the normal platform's p99 POST latency in phase 2 to phase 1.
The rate limit is off (``GRADER_RATE_LIMIT_PER_MINUTE=0``) and the queue cap out of reach;
the per-key admission limits (``GRADER_MAX_IN_FLIGHT_PER_KEY``,
``GRADER_REFUSED_POSTS_PER_MINUTE``) are at their defaults unless set in the environment.
With ``--rounds N`` the phases alternate in N blocks each (alone, beside, alone, …; the hostile
process paused between, its last requests given ``SETTLE_S`` to end), so on a machine shared
with other jobs both phases meet the same background load; the load average is recorded.
With ``--pin`` the hostile process runs on the last CPU and everything else (the server, its
grading process and the normal client) on the others, in both phases: a hostile platform is
another machine, so its own client-side CPU (building and sending 8 MiB bodies) should not
count against the server; without it, on 2 cores, that CPU is most of what phase 2 measures.

    python -m benchmarks.hostile_soak --seconds 30 --out benchmarks/results/hostile_soak.json
    python -m benchmarks.hostile_soak --seconds 30 --rounds 6 --pin
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from benchmarks.lib.common import ROOT
from grader.api.keys import new_key
from grader.service.store import Store
from tests.integration.service import free_port, wait_for

EXAM = "grad_accum_engineer"
BODY_BYTES = 8 * 1024 * 1024
SETTLE_S = 2.0  # after the hostile process is paused or resumed, before timing again
# Answers that froze the service before its linear-text fixes, at sizes that took seconds then.
WORST_ANSWERS = [
    ("004-s1-q1", "A " * 18 + "z"),  # the choice reader's backtracking (item 1)
    ("004-s5-q3", "C11" * 18 + "x"),  # the verdict fragment before the judge (item 2)
    ("004-s5-q3", "ab" + "\n" * 19_998),  # the injection detector (item 3)
    ("004-s5-q3", "[" * 10_000 + "x" * 9_999),  # the injection detector (item 3)
]


def examples() -> list[dict]:
    path = ROOT / "examples" / f"{EXAM}.submissions.jsonl"
    return [json.loads(line) for line in path.open()]


class Server:
    """``grader serve --inline`` in ``workdir``, with a normal and a hostile platform."""

    def __init__(self, workdir: Path):
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "GRADER_DATABASE_URL": f"sqlite:///{workdir / 'grader.db'}",
            "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / f"{EXAM}.yaml")]),
            "GRADER_JUDGE": "scripted",
            "GRADER_EMBED_MODEL": "none",
            "GRADER_RATE_LIMIT_PER_MINUTE": "0",  # the hostile platform's worst, not its quota
            "GRADER_MAX_QUEUED_PER_PLATFORM": "1000000",
        }
        store = Store(self.env["GRADER_DATABASE_URL"])
        store.migrate()
        self.keys = {}
        for name in ("normal", "hostile"):
            key = new_key()
            store.accounts.add_platform(name, [EXAM], key.key_id, key.key_hash, "secret")
            self.keys[name] = key.key
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grader", "serve", "--inline", "--port", str(self.port)],
            cwd=workdir, env=self.env, stdout=(workdir / "serve.log").open("w"),
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        wait_for(self._up, 120, "grader serve --inline")

    def headers(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[name]}"}

    def _up(self) -> bool:
        try:
            return httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def normal_posts(server: Server, seconds: float, prefix: str) -> list[float]:
    """POST one submission at a time for ``seconds``: each POST's latency in seconds."""
    pool, latencies = examples(), []
    with httpx.Client(base_url=server.base, headers=server.headers("normal"), timeout=120) as c:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ex = pool[len(latencies) % len(pool)]
            item = {"id": f"{prefix}-{len(latencies)}", "exam": EXAM,
                    "question_id": ex["question_id"], "answer": ex["answer"]}  # fmt: skip
            started = time.perf_counter()
            response = c.post("/v1/submissions", json=item)
            latencies.append(time.perf_counter() - started)
            assert response.status_code == 202, response.text
    return latencies


class Hostile:
    """The hostile platform's threads, in a process of their own (their client-side work must
    not slow the normal platform's client); ``sent`` counts its requests by kind and status.
    ``pause`` and ``resume`` stop and restart them (``active``: whether they start at once)."""

    def __init__(
        self,
        base: str,
        port: int,
        headers: dict[str, str],
        kinds: list[str],
        slow: int,
        cpus: set[int] | None = None,
        active: bool = True,
    ):
        self.base, self.port, self.headers = base, port, headers
        self.kinds, self.slow, self.cpus, self.starts_active = kinds, slow, cpus, active
        self.sent: dict[str, dict[str, int]] = {}

    def run(self, stop, active, report) -> None:
        """The child process: run the threads until ``stop`` is set (each request waiting for
        ``active``), then ``report`` counts."""
        self.stop, self.active, self.lock = stop, active, threading.Lock()
        if self.cpus:
            os.sched_setaffinity(0, self.cpus)
        bodies = {"list": b"[" + b"[]," * ((BODY_BYTES - 8) // 3) + b"[]]", "object": _object()}
        threads = [threading.Thread(target=self._post_body, args=(k, bodies[k]))
                   for k in self.kinds if k in bodies]  # fmt: skip
        if "answers" in self.kinds:
            threads.append(threading.Thread(target=self._post_answers))
        threads += [threading.Thread(target=self._slow_head) for _ in range(self.slow)]
        for thread in threads:
            thread.daemon = True
            thread.start()
        stop.wait()
        with self.lock:
            report.put(self.sent)

    def _count(self, kind: str, status: str) -> None:
        with self.lock:
            self.sent.setdefault(kind, {}).setdefault(status, 0)
            self.sent[kind][status] += 1

    def _post_body(self, kind: str, body: bytes) -> None:
        headers = {**self.headers, "Content-Type": "application/json"}
        with httpx.Client(base_url=self.base, headers=headers, timeout=120) as c:
            while not self.stop.is_set():
                if not self.active.wait(0.2):
                    continue
                try:
                    self._count(kind, str(c.post("/v1/submissions", content=body).status_code))
                except httpx.TransportError:  # closed mid-body before the answer came: again
                    self._count(kind, "connection closed")

    def _post_answers(self) -> None:
        n = 0
        with httpx.Client(base_url=self.base, headers=self.headers, timeout=600) as c:
            while not self.stop.is_set():
                if not self.active.wait(0.2):
                    continue
                items = [{"id": f"h-{n}-{i}", "exam": EXAM, "question_id": q, "answer": a}
                         for i, (q, a) in enumerate(WORST_ANSWERS)]  # fmt: skip
                n += 1
                self._count("answers", str(c.post("/v1/submissions", json=items).status_code))

    def _slow_head(self) -> None:
        head = f"POST /v1/submissions HTTP/1.1\r\nHost: x\r\nX-Slow: {'a' * 4000}".encode()
        while not self.stop.is_set():
            if not self.active.wait(0.2):
                continue
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
                    for byte in head:
                        if self.stop.wait(1):
                            return
                        if not self.active.is_set():
                            break  # paused: this connection closes
                        s.sendall(bytes([byte]))
            except OSError:  # closed by the server: open another at once
                self._count("slow", "closed by the server")

    def __enter__(self) -> Hostile:
        self._stop, self._report = multiprocessing.Event(), multiprocessing.Queue()
        self._active = multiprocessing.Event()
        if self.starts_active:
            self._active.set()
        self._process = multiprocessing.Process(
            target=self.run, args=(self._stop, self._active, self._report)
        )
        self._process.start()
        return self

    def pause(self) -> None:
        self._active.clear()

    def resume(self) -> None:
        self._active.set()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.sent = self._report.get(timeout=60)
        self._process.join(30)


def _object() -> bytes:
    """An 8 MiB JSON object of ~700,000 keys."""
    parts, size, i = [], 1, 0
    while size < BODY_BYTES - 64:
        part = f'"k{i}":0'
        parts.append(part)
        size += len(part) + 1
        i += 1
    return ("{" + ",".join(parts) + "}").encode()


def summary(latencies: list[float]) -> dict:
    ordered = sorted(latencies)
    return {
        "posts": len(ordered),
        "p50_ms": round(1000 * statistics.median(ordered), 1),
        "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1),
        "max_ms": round(1000 * ordered[-1], 1),
    }


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m benchmarks.hostile_soak", description=__doc__.split("\n\n")[0]
    )
    found.add_argument("--seconds", type=float, default=30, help="each phase")
    found.add_argument("--slow", type=int, default=150, help="slow-head connections")
    found.add_argument(
        "--kinds",
        nargs="*",
        default=["list", "object"],
        choices=["list", "object", "answers"],
        help="hostile bodies posted",
    )
    found.add_argument(
        "--pin",
        action="store_true",
        help="the hostile process on the last CPU, the rest on the others",
    )
    found.add_argument(
        "--rounds", type=int, default=1, help="alternate the phases in this many blocks each"
    )
    found.add_argument("--out", type=Path)
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    kinds = args.kinds
    hostile_cpus = None
    if args.pin:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            raise SystemExit("--pin needs at least 2 CPUs")
        hostile_cpus = {cpus[-1]}
        os.sched_setaffinity(0, set(cpus[:-1]))  # the server and its children inherit it
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp))
        try:
            normal_posts(server, 3, "warm")
            hostile = Hostile(
                server.base, server.port, server.headers("hostile"), kinds, args.slow,
                hostile_cpus, active=False,
            )  # fmt: skip
            alone, beside, block = [], [], args.seconds / args.rounds
            with hostile:
                time.sleep(SETTLE_S)  # its bodies built
                for r in range(args.rounds):
                    alone += normal_posts(server, block, f"alone{r}")
                    hostile.resume()
                    time.sleep(SETTLE_S)  # the hostile threads under way
                    beside += normal_posts(server, block, f"beside{r}")
                    hostile.pause()
                    time.sleep(SETTLE_S)
            sent = hostile.sent
        finally:
            server.close()
    result = {
        "alone": summary(alone),
        "beside_hostile": summary(beside),
        "p99_ratio": round(summary(beside)["p99_ms"] / summary(alone)["p99_ms"], 2),
        "hostile": {"kinds": kinds, "slow_connections": args.slow, "requests": sent},
        "seconds_per_phase": args.seconds,
        "rounds": args.rounds,
        "load_average_1min": {"start": load_before[0], "end": os.getloadavg()[0]},
        "pinned": args.pin,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
