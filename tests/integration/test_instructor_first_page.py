"""The instructor pages' "grade these first" in a real browser: headless Debian Chromium driven by
Playwright against `grader serve --inline` with the packaged e5 model (the page chooses by the
answers' meaning; no judge call), on an exam whose stored grades the shipped scorer decided
(tests/refit_exam.py), none scored yet.

The loop: the question list links the page, the instructor scores answers there (each form
returns to it), regrades the rest, and the platform then reads grades re-scored with those
scores as neighbours. A screenshot is saved to test-artifacts/instructor-first.png.
"""

from __future__ import annotations

import re

import httpx
import pytest

from grader.service.store import Store
from tests.conftest import RUBRICS
from tests.integration.service import (
    browser_page,
    chromium,
    inline_server,
    pages_service,
    screenshot,
)
from tests.refit_exam import EXAM, QUESTIONS, scored_exam

pytestmark = pytest.mark.slow

QUESTION = QUESTIONS[0]
SCORES = ("1", "3", "4.5")  # given on the page to the first three picks


def test_an_instructor_grades_the_chosen_answers_first_and_regrades_the_rest(tmp_path):
    browser_path = chromium()
    from playwright.sync_api import expect, sync_playwright

    env, api_key, key = pages_service(
        tmp_path, RUBRICS / f"{EXAM}.yaml", EXAM, "multilingual-e5-small"
    )
    store = Store(env["GRADER_DATABASE_URL"])
    platform = store.accounts.platform_by_name("acme")
    ids = scored_exam(store, platform.id, None, per_question=0, unscored=22)
    external = {sid: ext for ext, sid in ids.items()}
    headers = {"Authorization": f"Bearer {api_key}"}
    with inline_server(env, tmp_path) as base:
        with sync_playwright() as p:
            page = browser_page(p, browser_path)
            page.set_default_timeout(60_000)  # the first choice loads the embedding model
            page.goto(f"{base}/instructor/login")
            page.fill("#key", key)
            page.click("button:has-text('Log in')")
            page.click(f"text={EXAM}")
            page.click(f"a.first-link[href$='/questions/{QUESTION}/first']")
            expect(page.locator("h1")).to_contain_text("Grade these first")
            cards = page.locator("ol.first-list section.card")
            expect(cards).to_have_count(10)
            expect(page.locator("#first-progress")).to_have_text("0 of 10 scored.")
            picks = [int(c.get_attribute("id")[1:]) for c in cards.all()]
            assert len(set(picks)) == 10 and all(external[i].startswith("r0-") for i in picks)

            for sid, score in zip(picks, SCORES, strict=False):
                card = page.locator(f"#a{sid}")
                card.locator("input[name=score]").fill(score)
                card.locator("button:has-text('Save')").click()
                expect(page.locator(".notice.ok")).to_have_text("Human score saved.")
                expect(page.locator(f"#a{sid} .human-score")).to_contain_text(f"scored {score}")
            expect(page.locator("#first-progress")).to_have_text("3 of 10 scored.")
            assert [int(c.get_attribute("id")[1:]) for c in cards.all()] == picks  # same picks
            screenshot(page, "instructor-first")

            page.click("button:has-text('Regrade the rest with these scores')")
            expect(page.locator(".notice.ok")).to_have_text(
                re.compile(r"^Regraded without the judge: 22 grade\(s\) re-scored, \d+ changed\.$")
            )
            page.click("nav a:has-text('review queue')")
            expect(page.locator("h1")).to_contain_text("Review queue")
            page.context.browser.close()

        scored = {external[i] for i in picks[: len(SCORES)]}
        unscored = next(e for e in (f"r0-{a}" for a in range(22)) if e not in scored)
        grade = httpx.get(f"{base}/v1/submissions/{unscored}", headers=headers).json()["grade"]
        assert grade["details"]["rescored_from"] is not None
        leaned = {n["id"] for n in grade["details"]["scorer"]["neighbours"]}
        assert leaned and leaned <= scored  # the scores given on the page, by the platform's ids
