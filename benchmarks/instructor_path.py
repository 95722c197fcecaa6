"""An instructor's path: the keystrokes and page loads it takes to score the README example's
24 essays (4 students × 6 essay questions of ``grad_accum_engineer``) from scratch on the
instructor pages, in headless Chromium driven by Playwright, before and after the keyboard
flow, side by side in one run.

Both flows score the same points per criterion (the judge's points rounded to whole ones,
so a score is one digit per criterion) and follow the same rules: log in (not counted), open
each question's page by its address (a bookmark: one page load, no key), then the keyboard
alone, every key counted and every page load counted.

- ``question-page`` (the page as it was at ``--before``, default 1905420, served from that
  commit's tree): for each answer, Tab until the focus is in its card's first criterion
  field, then each criterion's digit with a Tab between, and Enter to save (the page reloads).
- ``grade-page`` (this tree): the score field has the focus; each answer is its digits and
  Enter, which saves it and opens the next unscored answer.

``python -m benchmarks.instructor_path --out benchmarks/results/instructor_path.json``
(needs Debian's chromium and the service extra; about a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path

import httpx

from benchmarks.lib.common import ROOT, code_version, command, write_result

EXAM = "grad_accum_engineer"
CHROMIUM = "/usr/bin/chromium"
MAX_TABS = 400  # a card not reached in this many Tabs fails the run


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m benchmarks.instructor_path", description=__doc__.split("\n\n")[0]
    )
    found.add_argument("--before", default="1905420", help="the commit of the old page")
    found.add_argument("--out", type=Path, help="the result JSON (else printed)")
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        old_tree = _tree_of(args.before, Path(folder) / "before")
        flows = {
            "question-page": _measure(old_tree, Path(folder) / "run-before", _question_page),
            "grade-page": _measure(ROOT, Path(folder) / "run-after", _grade_page),
        }
    result = {
        "benchmark": "instructor_path",
        "command": command(),
        "code": code_version("grader"),
        "before": args.before,
        "essays": flows["grade-page"]["essays"],
        "flows": flows,
        "machine": f"{os.cpu_count()} cores, {sys.platform}, headless Chromium",
    }
    write_result(result, args.out)
    print("| flow | essays | keystrokes | of them Tab | page loads | keys per essay |")
    print("|---|---|---|---|---|---|")
    for name, f in flows.items():
        per = f["keystrokes"] / f["essays"]
        print(
            f"| {name} | {f['essays']} | {f['keystrokes']} | {f['tabs']} | {f['loads']} | {per:.1f} |"
        )


def _tree_of(commit: str, folder: Path) -> Path:
    """The repository's files at ``commit`` (git archive), to serve the old pages from."""
    archive = subprocess.run(
        ["git", "archive", commit], cwd=ROOT, capture_output=True, check=True
    ).stdout
    folder.mkdir(parents=True)
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def _essays(tree: Path) -> list[dict]:
    bank_answers = ROOT / "examples" / f"{EXAM}.submissions.jsonl"
    rows = [json.loads(line) for line in bank_answers.open(encoding="utf-8")]
    return [
        {"id": r["id"], "exam": EXAM, "question_id": r["question_id"], "answer": r["answer"],
         "student": r["student"]}
        for r in rows
        if r["question_id"].startswith(("004-s5", "004-s6"))
    ]  # fmt: skip


def _measure(tree: Path, work: Path, flow) -> dict:
    """Serve ``tree``'s code with the example's essays graded, and run ``flow`` against it."""
    from playwright.sync_api import sync_playwright

    work.mkdir(parents=True)
    shutil.copy(tree / "rubrics" / f"{EXAM}.yaml", work / f"{EXAM}.yaml")
    shutil.copytree(tree / "rubrics" / EXAM, work / EXAM)
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "GRADER_DATABASE_URL": f"sqlite:///{work / 'grader.db'}",
        "GRADER_BANKS": json.dumps([str(work / f"{EXAM}.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
        "GRADER_REDIS_URL": "redis://127.0.0.1:1/0",
    }
    env.pop("GRADER_SCORER", None)
    api = _printed(_cli(env, work, "platform", "add", "acme", "--exam", EXAM), "api_key")
    key = _printed(_cli(env, work, "instructor", "add", "li", "--exam", EXAM), "instructor_key")
    essays = _essays(tree)
    with _server(env, work) as base:
        headers = {"Authorization": f"Bearer {api}"}
        assert httpx.post(f"{base}/v1/submissions", json=essays, headers=headers).status_code == 202
        _wait(lambda: _all_graded(base, headers, len(essays)), 120)
        questions = sorted({e["question_id"] for e in essays})
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                        args=["--no-sandbox"] if os.geteuid() == 0 else [])  # fmt: skip
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{base}/instructor/login")
            page.fill("#key", key)
            with page.expect_navigation():
                page.click("button")
            page.wait_for_load_state()
            counts = {"keystrokes": 0, "tabs": 0, "loads": 0}
            page.on("load", lambda _: counts.__setitem__("loads", counts["loads"] + 1))
            started = time.monotonic()
            for question in questions:
                flow(page, base, question, _scores(base, headers, question), counts)
            seconds = time.monotonic() - started
            browser.close()
    scored = _scored(work / "grader.db", len(essays))
    return {**counts, "essays": scored, "seconds": round(seconds, 1)}


def _scores(base: str, headers: dict, question: str) -> list[tuple[str, list[int]]]:
    """(submission id, points per criterion) to enter: the judge's, rounded to whole points."""
    export = httpx.get(f"{base}/v1/exams/{EXAM}/grades", headers=headers).text.splitlines()
    found = [json.loads(x) for x in export]
    return [
        (s["id"], [round(c["points"]) for c in s["grade"]["criteria"]])
        for s in found
        if s["question_id"] == question
    ]


def _question_page(page, base: str, question: str, scores, counts: dict) -> None:
    page.goto(f"{base}/instructor/exams/{EXAM}/questions/{question}")
    for external, points in scores:
        card = page.locator("section.card").filter(has=page.locator(
            ".head span.muted", has_text=external))  # fmt: skip
        target = card.locator("input[name=c_C1]").element_handle()
        for _ in range(MAX_TABS):
            if page.evaluate("(t) => document.activeElement === t", target):
                break
            _press(page, "Tab", counts)
        else:
            raise RuntimeError(f"{external}: its score field not reached in {MAX_TABS} Tabs")
        for i, point in enumerate(points):
            _type(page, str(point), counts)
            if i < len(points) - 1:
                _press(page, "Tab", counts)
        with page.expect_navigation():
            _press(page, "Enter", counts)


def _grade_page(page, base: str, question: str, scores, counts: dict) -> None:
    page.goto(f"{base}/instructor/exams/{EXAM}/questions/{question}/grade")
    for _ in scores:
        at = page.locator("input[name=at]").get_attribute("value")
        external = page.locator("section.card .head span.muted").first.inner_text()
        points = dict(scores)[external]
        assert at and page.evaluate("document.activeElement.name") == "points"
        _type(page, "".join(str(p) for p in points), counts)
        with page.expect_navigation():
            _press(page, "Enter", counts)


def _press(page, key: str, counts: dict) -> None:
    page.keyboard.press(key)
    counts["keystrokes"] += 1
    counts["tabs"] += key == "Tab"


def _type(page, text: str, counts: dict) -> None:
    page.keyboard.type(text)
    counts["keystrokes"] += len(text)


def _scored(database: Path, expected: int) -> int:
    """How many essays an instructor scored, read from the service's database (the old pages
    kept a score beside the grade, so the API does not show it)."""
    with sqlite3.connect(database) as conn:
        done = conn.execute("SELECT count(DISTINCT submission_id) FROM human_scores").fetchone()[0]
    if done != expected:
        raise RuntimeError(f"{done} of {expected} essays scored")
    return done


def _all_graded(base: str, headers: dict, count: int) -> bool:
    export = httpx.get(f"{base}/v1/exams/{EXAM}/grades", headers=headers).text.splitlines()
    return sum(json.loads(x)["status"] == "graded" for x in export) == count


def _cli(env: dict, cwd: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    if done.returncode:
        raise RuntimeError(done.stderr)
    return done.stdout


def _printed(stdout: str, name: str) -> str:
    return next(x for x in stdout.splitlines() if x.startswith(f"{name}="))[len(name) + 1 :]


@contextmanager
def _server(env: dict, cwd: Path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "grader", "serve", "--inline", "--port", str(port)],
        cwd=cwd, env=env, stdout=(cwd / "serve.log").open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(lambda: _healthy(base) or server.poll() is not None, 60)
        if server.poll() is not None:
            raise RuntimeError((cwd / "serve.log").read_text())
        yield base
    finally:
        server.terminate()
        server.wait(20)


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=1).status_code in (200, 503)
    except httpx.HTTPError:
        return False


def _wait(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:g} s")
        time.sleep(0.2)


if __name__ == "__main__":
    main()
