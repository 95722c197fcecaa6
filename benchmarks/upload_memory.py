"""Peak memory of `grader serve` when a client sends an oversize body (issue 15, item 1).

Each case starts a fresh `grader serve --inline` (scripted judge, SQLite, no embeddings) from
the code under ``--root``, records its resident memory once it answers, sends one hostile
request, and reads the process's peak resident memory (VmHWM) afterwards. Run it against the
code before and after a change with two roots:

    python -m benchmarks.upload_memory --root /path/to/old --label before --out before.json
    python -m benchmarks.upload_memory --root . --label after --out after.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

MIB = 1024 * 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _multipart_file(size: int, boundary: str) -> tuple[int, Iterator[bytes]]:
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="key"; filename="k.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def chunks() -> Iterator[bytes]:
        yield head
        for _ in range(size // MIB):
            yield b"x" * MIB
        yield tail

    return len(head) + size + len(tail), chunks()


def _multipart_fields(count: int, size: int, boundary: str) -> tuple[int, Iterator[bytes]]:
    parts = [
        (f'--{boundary}\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\n').encode()
        for i in range(count)
    ]
    tail = f"--{boundary}--\r\n".encode()

    def chunks() -> Iterator[bytes]:
        for head in parts:
            yield head
            yield b"y" * size + b"\r\n"
        yield tail

    return sum(len(h) + size + 2 for h in parts) + len(tail), chunks()


CASES = {
    "64 MiB file part to /instructor/login": lambda b: _multipart_file(64 * MIB, b),
    "400 fields of 1 MiB to /instructor/login": lambda b: _multipart_fields(400, MIB, b),
}


def run_case(root: Path, name: str) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="grader-upload-"))
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "GRADER_DATABASE_URL": f"sqlite:///{folder / 'grader.db'}",
        "GRADER_BANKS": json.dumps([str(root / "rubrics" / "grad_accum_engineer.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "grader", "serve", "--inline", "--port", str(port)],
        cwd=folder, env=env, stdout=(folder / "serve.log").open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        time.sleep(1.0)  # settle
        before = _kib(server.pid, "VmRSS")
        boundary = "benchmarkboundary"
        length, body = CASES[name](boundary)
        started = time.perf_counter()
        try:
            response = httpx.post(
                f"{base}/instructor/login",
                content=body,
                headers={
                    "Content-Type": f"multipart/form-data; boundary={boundary}",
                    "Content-Length": str(length),
                },
                timeout=300,
            )
            status = response.status_code
        except httpx.HTTPError as exc:  # the server may close the connection after a 413
            status = f"{type(exc).__name__}"
        seconds = time.perf_counter() - started
        time.sleep(0.5)
        peak = _kib(server.pid, "VmHWM")
    finally:
        server.terminate()
        server.wait(30)
    return {
        "case": name,
        "body_mib": round(length / MIB, 1),
        "status": status,
        "rss_before_mib": round(before / 1024, 1),
        "peak_rss_mib": round(peak / 1024, 1),
        "peak_growth_mib": round((peak - before) / 1024, 1),
        "seconds": round(seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--label", default="")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = [run_case(args.root.resolve(), name) for name in CASES]
    report = {"label": args.label, "root": str(args.root), "results": results}
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
