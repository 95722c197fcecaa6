"""`grader serve --inline` as a user runs it: a real HTTP server, no Redis, one SQLite file."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.integration.service import ROOT, free_port, grader_cli, printed_value, wait_for

pytestmark = pytest.mark.slow

EXAM = "grad_accum_engineer"
ANSWER = (
    "每个micro-batch的loss除以累积步数再backward，累积够步数后optimizer.step()，然后zero_grad()。"
)


def _healthy(client: httpx.Client) -> bool:
    try:
        return client.get("/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


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


# A judge that holds the interpreter lock for seconds, as a backtracking regex over a hostile
# answer does: loaded into every process of the test's ``grader serve --inline`` through
# ``sitecustomize``, it logs when its burn starts and ends.
_BURNING_JUDGE = """
import os, re
from grader.judge import scripted

def _event(name):
    with open(os.environ["BURN_EVENTS"], "a") as f:
        f.write(name + "\\n")


def _burning(method):
    def judge(self, requests):
        if any("burn-the-cpu" in r.answer for r in requests):
            _event("burn-start")
            re.fullmatch(r"(x+x+)+y", "x" * 28)  # one call into C: seconds without a GIL switch
            _event("burn-end")
        return method(self, requests)

    return judge


for name in ("complete", "score_labels"):  # verdicts or label scores: whichever it asks for
    setattr(scripted.ScriptedJudge, name, _burning(getattr(scripted.ScriptedJudge, name)))
"""


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in "ZX"


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_grading_that_holds_the_gil_stalls_no_intake_and_dies_with_the_server(tmp_path):
    """While the judge holds the interpreter lock for seconds, /healthz and another
    platform's POST answer (before the burn ends); the grades still arrive; the grading
    process dies with a SIGKILLed server."""
    hooks, events = tmp_path / "hooks", tmp_path / "events"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_BURNING_JUDGE)
    env = {
        **os.environ,
        "PYTHONPATH": f"{hooks}{os.pathsep}{ROOT}",
        "BURN_EVENTS": str(events),
        "GRADER_DATABASE_URL": f"sqlite:///{tmp_path / 'grader.db'}",
        "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / f"{EXAM}.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
    }
    keys = {
        name: printed_value(grader_cli(env, tmp_path, "platform", "add", name, "--exam", EXAM), "api_key")
        for name in ("acme", "other")
    }  # fmt: skip
    port = free_port()
    log = tmp_path / "serve.log"
    server = subprocess.Popen(
        [sys.executable, "-m", "grader", "serve", "--inline", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300)

    def answered(path: str, key: str) -> dict:
        return client.get(path, headers={"Authorization": f"Bearer {key}"}).json()

    def post(key: str, items: list[dict]) -> None:
        response = client.post(
            "/v1/submissions", json=items, headers={"Authorization": f"Bearer {key}"}
        )
        assert response.status_code == 202, response.text

    try:
        wait_for(lambda: _healthy(client) or server.poll() is not None, 60, "/healthz")
        assert server.poll() is None, log.read_text()
        post(keys["acme"], [
            {"id": "e1", "exam": EXAM, "question_id": "004-s5-q3", "answer": ANSWER + " burn-the-cpu"},
            {"id": "c1", "exam": EXAM, "question_id": "004-s1-q1", "answer": "B"},
        ])  # fmt: skip
        wait_for(lambda: events.exists() and "burn-start" in events.read_text(), 60, "the burn")

        assert client.get("/healthz").status_code == 200
        with events.open("a") as f:
            f.write("healthz\n")
        post(keys["other"], [{"id": "o1", "exam": EXAM, "question_id": "004-s1-q1", "answer": "B"}])
        with events.open("a") as f:
            f.write("posted\n")

        for key, sid in ((keys["acme"], "e1"), (keys["acme"], "c1"), (keys["other"], "o1")):
            wait_for(lambda key=key, sid=sid: answered(f"/v1/submissions/{sid}", key)["status"] == "graded",
                     60, f"the grade of {sid}")  # fmt: skip
        assert events.read_text().split() == ["burn-start", "healthz", "posted", "burn-end"]

        child = int(re.search(r"grading in process (\d+)", log.read_text())[1])
        server.kill()  # no chance to stop its child: the kernel (or the doorbell's end) does
        server.wait(20)
        wait_for(lambda: not _running(child), 30, "the grading process to die with the server")
    finally:
        client.close()
        server.kill()
        server.wait(20)


# A judge that starts an engine process when it loads, as vLLM does, and an engine that
# outlives the judge's close: loaded into every process of the test's server through
# ``sitecustomize``; each engine's pid is written to ``ENGINE_PIDS``.
_ENGINE_JUDGE = """
import os, subprocess, sys
import grader.judge
from grader.judge.scripted import ScriptedJudge


def _with_engine(settings):
    engine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["ENGINE_PIDS"], "a") as f:
        f.write(f"{engine.pid}\\n")
    return ScriptedJudge()


grader.judge._FACTORIES["scripted"] = _with_engine
"""


@pytest.mark.skipif(sys.platform != "linux", reason="process groups, /proc")
def test_the_judge_loads_with_the_first_answer_that_needs_it_and_sigterm_stops_every_process(
    tmp_path,
):
    """The server answers before any judge loads; an answer the rules grade loads none; the
    first that needs the judge loads it (its engine process starts); SIGTERM then stops the
    server and every process it started, the engine included."""
    import psutil

    hooks, engines = tmp_path / "hooks", tmp_path / "engines"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_ENGINE_JUDGE)
    env = {
        **os.environ,
        "PYTHONPATH": f"{hooks}{os.pathsep}{ROOT}",
        "ENGINE_PIDS": str(engines),
        "GRADER_DATABASE_URL": f"sqlite:///{tmp_path / 'grader.db'}",
        "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / f"{EXAM}.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
    }
    key = printed_value(grader_cli(env, tmp_path, "platform", "add", "acme", "--exam", EXAM),
                        "api_key")  # fmt: skip
    port = free_port()
    log = tmp_path / "serve.log"
    server = subprocess.Popen(
        [sys.executable, "-m", "grader", "serve", "--inline", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                          headers={"Authorization": f"Bearer {key}"})  # fmt: skip

    def graded(sid: str) -> bool:
        return client.get(f"/v1/submissions/{sid}").json()["status"] == "graded"

    def post(sid: str, question: str, answer: str) -> None:
        item = {"id": sid, "exam": EXAM, "question_id": question, "answer": answer}
        assert client.post("/v1/submissions", json=item).status_code == 202

    try:
        wait_for(lambda: _healthy(client) or server.poll() is not None, 60, "/healthz")
        assert server.poll() is None, log.read_text()
        post("c1", "004-s1-q1", "B")  # a choice: the rules grade it
        wait_for(lambda: graded("c1"), 60, "the choice's grade")
        assert not engines.exists(), "no answer needed the judge: it must not have loaded"
        post("e1", "004-s5-q3", ANSWER)
        wait_for(lambda: graded("e1"), 60, "the essay's grade")
        (engine,) = map(int, engines.read_text().split())
        started = psutil.Process(server.pid).children(recursive=True)
        assert engine in {p.pid for p in started} and len(started) >= 2

        server.send_signal(signal.SIGTERM)  # uvicorn stops, then ends with the signal's status
        assert server.wait(60) in (0, -signal.SIGTERM), log.read_text()[-3000:]
        wait_for(lambda: not any(_alive(p) for p in started), 30, "every process to stop")
    finally:
        client.close()
        server.kill()
        server.wait(20)
        for pid in map(int, engines.read_text().split()) if engines.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _alive(process) -> bool:
    """Still running (a zombie is over: its parent, or init, reaps it)."""
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


_FAILING_JUDGE = """
import grader.judge
from grader.errors import ConfigError


def _missing(settings):
    raise ConfigError("the judge's model is missing")


grader.judge._FACTORIES["scripted"] = _missing
"""


def test_a_judge_that_cannot_load_is_logged_and_its_answers_stay_queued(tmp_path):
    """The server starts (the judge is not loaded yet) and grades what needs no judge; the
    first answer that needs it meets the failed load: the error is logged, the grading process
    restarted (to try the load again, after a delay that doubles), the answer left queued, and
    the server keeps answering."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_FAILING_JUDGE)
    env = {
        **os.environ,
        "PYTHONPATH": f"{hooks}{os.pathsep}{ROOT}",
        "GRADER_DATABASE_URL": f"sqlite:///{tmp_path / 'grader.db'}",
        "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / f"{EXAM}.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
    }
    key = printed_value(grader_cli(env, tmp_path, "platform", "add", "acme", "--exam", EXAM),
                        "api_key")  # fmt: skip
    port = free_port()
    log = tmp_path / "serve.log"
    server = subprocess.Popen(
        [sys.executable, "-m", "grader", "serve", "--inline", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                          headers={"Authorization": f"Bearer {key}"})  # fmt: skip

    def status(sid: str) -> str:
        return client.get(f"/v1/submissions/{sid}").json()["status"]

    try:
        wait_for(lambda: _healthy(client) or server.poll() is not None, 60, "/healthz")
        assert server.poll() is None, log.read_text()
        for sid, question, answer in (("c1", "004-s1-q1", "B"), ("e1", "004-s5-q3", ANSWER)):
            item = {"id": sid, "exam": EXAM, "question_id": question, "answer": answer}
            assert client.post("/v1/submissions", json=item).status_code == 202
        wait_for(lambda: status("c1") == "graded", 60, "the choice's grade")
        wait_for(lambda: "restarting it in" in log.read_text(), 60, "the restart")
        assert "the judge could not load: the judge's model is missing" in log.read_text()
        assert status("e1") == "queued" and server.poll() is None
        # it answers; 503 while its grading process is down, between restarts
        assert client.get("/healthz").status_code in (200, 503)
    finally:
        client.close()
        server.terminate()
        server.wait(60)
