"""The scorer refit on the instructor pages in a real browser: headless Debian Chromium driven by
Playwright against `grader serve --inline` (no judge call, no embedding model), on an exam whose
stored grades the shipped scorer decided and an instructor scored (tests/refit_exam.py).

An instructor proposes a refit, reads before and after on held-out questions, and applies it;
the platform then reads re-scored grades. A screenshot of the proposal is saved to
test-artifacts/instructor-refit.png.
"""

from __future__ import annotations

import re

import httpx
import pytest

from grader.api.keys import INSTRUCTOR_PREFIX, key_id_of
from grader.service.store import Store
from tests.conftest import RUBRICS
from tests.integration.service import (
    browser_page,
    chromium,
    inline_server,
    pages_service,
    screenshot,
)
from tests.refit_exam import BASE, EXAM, scored_exam

pytestmark = pytest.mark.slow


def test_an_instructor_proposes_and_applies_a_refit_in_a_browser(tmp_path):
    browser_path = chromium()
    from playwright.sync_api import expect, sync_playwright

    env, api_key, key = pages_service(tmp_path, RUBRICS / f"{EXAM}.yaml", EXAM, "none")
    store = Store(env["GRADER_DATABASE_URL"])
    instructor = store.accounts.instructor(key_id=key_id_of(key, INSTRUCTOR_PREFIX))
    platform = store.accounts.platform_by_name("acme")
    scored_exam(store, platform.id, instructor.id)  # 60 scored answers on 3 questions, 66 graded
    headers = {"Authorization": f"Bearer {api_key}"}
    with inline_server(env, tmp_path) as base:
        before = httpx.get(f"{base}/v1/submissions/r1-3", headers=headers).json()["grade"]

        with sync_playwright() as p:
            page = browser_page(p, browser_path)
            page.goto(f"{base}/instructor/login")
            page.fill("#key", key)
            page.click("button:has-text('Log in')")
            page.click(f"text={EXAM}")
            page.click("a:has-text('scorer refit')")
            expect(page.locator("table")).to_contain_text("No refit proposed yet.")
            page.click("button:has-text('Propose a refit')")
            expect(page.locator(".notice.ok")).to_contain_text("Refit proposed.")
            [proposal] = store.scorers.proposals(EXAM)
            overall = proposal.report["comparison"]
            for side in ("before", "after"):
                mae = overall[side]["overall"]["mae"]["value"]
                expect(page.locator(f"table.comparison tr.metric-mae td.{side}")).to_contain_text(
                    f"{mae:.3f}"
                )
            expect(page.locator("h1")).to_have_text(f"Refit {proposal.version}")
            expect(page.locator("body")).to_contain_text("whole questions held out")
            screenshot(page, "instructor-refit")

            page.click("button:has-text('Apply this refit')")
            expect(page.locator(".notice.ok")).to_have_text(
                re.compile(r"^Refit applied: 66 grade\(s\) re-scored without the judge")
            )
            expect(page.locator("main")).to_contain_text("grading now")
            page.click("a:has-text('scorer')")
            expect(page.locator("table")).to_contain_text("grading now")
            page.context.browser.close()

        grade = httpx.get(f"{base}/v1/submissions/r1-3", headers=headers).json()["grade"]
        assert grade["provenance"]["scorer_version"] == proposal.version != BASE.version
        # r1-3 was scored by the instructor: that score stays its grade, the judge's beneath
        # is re-scored (what it was stays in rescored_from)
        assert grade["score"] == before["score"] and grade["method"] == "instructor"
        judge_before = before["details"]["override"]["judge"]["score"]
        assert grade["details"]["rescored_from"]["score"] == judge_before
        assert store.scorers.applied(EXAM).applied_by == "li"
