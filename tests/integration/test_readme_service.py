"""The README's service example runs as written: its shell block (curl) and its Python block
(``grader.client``), each posting the bundled example exam, against a real
``grader serve --inline`` (scripted judge, no embedding model). Only the host and the key
are put in; the rest is the README's text."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import httpx
import pytest

from tests.integration.service import ROOT, grader_cli, inline_server, printed_value

pytestmark = pytest.mark.slow

EXAM = "grad_accum_engineer"


def readme_block(language: str, containing: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return next(b for b in blocks if containing in b)


def test_the_readmes_service_example_runs_as_written(tmp_path):
    if shutil.which("curl") is None:
        pytest.skip("needs curl")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GRADER_DATABASE_URL": f"sqlite:///{tmp_path / 'grader.db'}",
        "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / f"{EXAM}.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
        "GRADER_REDIS_URL": "redis://127.0.0.1:1/0",
    }
    key = printed_value(grader_cli(env, tmp_path, "platform", "add", "acme", "--exam", EXAM),
                        "api_key")  # fmt: skip
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # the README's relative paths
    answers = [json.loads(x) for x in (ROOT / "examples" / f"{EXAM}.submissions.jsonl").open()]
    with inline_server(env, tmp_path) as base:
        shell = readme_block("sh", "--data-binary @answers.json")
        shell = shell.replace("http://grader:8080", base).replace("KEY=gk_…", f"KEY={key}")
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", shell], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert '"duplicate":false' in done.stdout and '"detail"' not in done.stdout

        code = readme_block("python", "from grader.client import GraderClient")
        code = code.replace("http://grader:8080", base).replace('"gk_…"', repr(key))
        run = subprocess.run(
            ["python", "-c", code], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        headers = {"Authorization": f"Bearer {key}"}
        stored = httpx.get(f"{base}/v1/exams/{EXAM}/grades", headers=headers).text.splitlines()
    graded = [json.loads(x) for x in stored]
    assert {g["id"] for g in graded} == {a["id"] for a in answers} | {"exam7-stu42-q3"}
    assert all(g["status"] == "graded" and g["version"] == 1 for g in graded)
    assert (tmp_path / "gradebook.csv").read_text().count("\n") == 1 + 5  # 4 students and stu42
