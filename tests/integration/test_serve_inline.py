"""`grader serve --inline` as a user runs it: a real HTTP server, no Redis, one SQLite file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from tests.integration.service import ROOT, free_port, wait_for

pytestmark = pytest.mark.slow


def test_serve_inline_grades_without_redis(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GRADER_DATABASE_URL": f"sqlite:///{tmp_path / 'grader.db'}",
        "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / "grad_accum_engineer.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_REDIS_URL": "redis://127.0.0.1:1/0",  # nothing listens: inline must not care
    }
    add = subprocess.run(
        [sys.executable, "-m", "grader", "platform", "add", "acme", "--exam", "grad_accum_engineer"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    key = next(x for x in add.stdout.splitlines() if x.startswith("api_key="))[len("api_key=") :]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "grader", "serve", "--inline", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=(tmp_path / "serve.log").open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {key}"}
    try:

        def healthy():
            try:
                return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return server.poll() is not None  # stop waiting if it died

        wait_for(healthy, 60, "grader serve --inline to answer")
        assert server.poll() is None, (tmp_path / "serve.log").read_text()
        answer = "每个micro-batch的loss除以累积步数再backward，累积够步数后optimizer.step()，然后zero_grad()。"
        posted = httpx.post(
            f"{base}/v1/submissions",
            json=[{"id": "e1", "exam": "grad_accum_engineer", "question_id": "004-s5-q3", "answer": answer},
                  {"id": "c1", "exam": "grad_accum_engineer", "question_id": "004-s1-q1", "answer": "B"}],
            headers=headers, timeout=10,
        )  # fmt: skip
        assert posted.status_code == 202, posted.text
        for sid in ("e1", "c1"):
            body = wait_for(
                lambda sid=sid: (r := httpx.get(f"{base}/v1/submissions/{sid}", headers=headers).json())["status"] == "graded" and r,
                30, f"grade of {sid}",
            )  # fmt: skip
            assert body["grade"]["submission_id"] == sid
        assert httpx.get(f"{base}/docs").status_code == 200
    finally:
        server.terminate()
        server.wait(20)
