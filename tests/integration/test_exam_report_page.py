"""The exam report in a real browser: the README's example exam graded by `grader grade`
(scripted judge, no embedding model), `grader report` on it, and headless Debian Chromium
(Playwright, launched by path: nothing downloaded) opening the file. Saves
test-artifacts/exam-report.png."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.service import ROOT, browser_page, chromium

pytestmark = pytest.mark.slow

BANK = ROOT / "rubrics" / "grad_accum_engineer.yaml"
EXAMPLE = ROOT / "examples" / "grad_accum_engineer.submissions.jsonl"


def _grader(tmp_path: Path, *args) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
    }
    done = subprocess.run(
        [sys.executable, "-m", "grader", *map(str, args)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_the_exam_report_opens_in_a_browser(tmp_path):
    browser_path = chromium()
    from playwright.sync_api import expect, sync_playwright

    grades, folder = tmp_path / "grades.jsonl", tmp_path / "report"
    _grader(tmp_path, "grade", "--bank", BANK, EXAMPLE, "--out", grades)
    _grader(tmp_path, "report", grades, "--bank", BANK, "--submissions", EXAMPLE, "--out", folder)
    figures = json.loads((folder / "report.json").read_text())
    with sync_playwright() as p:
        page = browser_page(p, browser_path)
        fetched, errors = [], []
        page.on("request", lambda r: fetched.append(r.url))
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.goto((folder / "index.html").as_uri())
        expect(page).to_have_title("Exam report: grad_accum_engineer")
        expect(page.locator("#items tr")).to_have_count(1 + 46)
        expect(page.locator("#students tr")).to_have_count(1 + 4)
        first = page.locator("#students tr").nth(1)
        best = max(figures["students"], key=lambda s: s["total"])
        expect(first).to_contain_text(best["student"])
        expect(page.locator("body")).to_contain_text(f"{figures['test']['alpha']:.2f}")
        # every plot decodes (a broken data URI has no natural width)
        widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
        assert len(widths) == 48 and min(widths) > 100
        flagged = page.locator("#items tr.flagged")
        assert flagged.count() == sum(
            1
            for q in figures["questions"]
            if q["items"] and set(q["items"]["flags"]) - {"no_variance"}
        )
        page.locator("#items a", has_text="004-s2-q1").first.click()
        expect(page.locator("#q-004-s2-q1 table.distractors tr")).to_have_count(1 + 4)
        out = ROOT / "test-artifacts"
        out.mkdir(exist_ok=True)
        page.goto((folder / "index.html").as_uri())
        page.screenshot(path=str(out / "exam-report.png"), full_page=True)
        page.context.browser.close()
    assert all(url.startswith(("file:", "data:")) for url in fetched), fetched
    assert errors == []
