"""/docs in a real browser with no way out: Swagger UI renders the API from this server's own
assets. Every request the page makes is recorded; one to any other host fails the test. A
screenshot goes to test-artifacts/api-docs.png."""

from __future__ import annotations

import json
import os

import pytest

from tests.integration.service import ROOT, browser_page, chromium, inline_server, screenshot

pytestmark = pytest.mark.slow


def test_swagger_ui_renders_offline(tmp_path):
    browser_path = chromium()
    from playwright.sync_api import expect, sync_playwright

    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GRADER_DATABASE_URL": f"sqlite:///{tmp_path / 'grader.db'}",
        "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / "grad_accum_engineer.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
        "GRADER_REDIS_URL": "redis://127.0.0.1:1/0",
    }
    with inline_server(env, tmp_path) as base, sync_playwright() as p:
        page = browser_page(p, browser_path)
        elsewhere: list[str] = []

        def only_here(route):
            if route.request.url.startswith(base):
                route.continue_()
            else:
                elsewhere.append(route.request.url)
                route.abort()

        page.route("**/*", only_here)
        page.goto(f"{base}/docs")
        expect(page.locator(".opblock-summary-path").first).to_be_visible(timeout=20_000)
        expect(page.locator("body")).to_contain_text("/v1/exams/{exam}/changes")
        screenshot(page, "api-docs")
        page.context.browser.close()
    assert elsewhere == []
