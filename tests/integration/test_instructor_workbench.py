"""The instructor's workbench in a real browser (Debian Chromium, Playwright) against
`grader serve --inline` with the packaged e5 model (the answer groups) and the scripted judge:
the instructor edits a criterion, regrades the question, grades a group of 5 similar answers
with the keyboard alone, and the platform's webhook receiver gets one signed `grade.updated`
for every grade that changed, counted; the API's grade is the last one it got.

Screenshots: test-artifacts/workbench-rubric.png, -regrade.png, -groups.png; the counts in
test-artifacts/workbench-webhooks.json.
"""

from __future__ import annotations

import json
import shutil

import httpx
import pytest
import sqlalchemy as sa

from grader.service.store import Store
from grader.service.store.schema import grade_versions
from tests.conftest import RUBRICS
from tests.integration.service import (
    ROOT,
    WebhookReceiver,
    browser_page,
    chromium,
    grader_cli,
    inline_server,
    pages_service,
    printed_value,
    screenshot,
    wait_for,
)

pytestmark = pytest.mark.slow

EXAM = "grad_accum_engineer"
ESSAY = "004-s5-q3"  # five criteria, a point each
GOOD = "每个micro-batch的loss除以累积步数再backward，梯度累加到.grad；累积够步数后optimizer.step()，然后zero_grad()。"  # fmt: skip
SIMILAR = [GOOD, GOOD + "！", GOOD.replace("；", "，"), "答：" + GOOD, GOOD.replace("然后", "再")]
OTHERS = [
    "多跑几步再更新参数。",
    "学习率越大越好，批次越小越好。",
    "梯度累积就是把学习率调小，和批次大小没有关系，也不需要清零。",
]


def test_edit_a_criterion_regrade_grade_a_group_and_every_change_reaches_the_platform(tmp_path):
    browser_path = chromium()
    from playwright.sync_api import expect, sync_playwright

    shutil.copy(RUBRICS / f"{EXAM}.yaml", tmp_path / f"{EXAM}.yaml")
    shutil.copytree(RUBRICS / EXAM, tmp_path / EXAM)
    receiver = WebhookReceiver("")
    env, _, key = pages_service(tmp_path, tmp_path / f"{EXAM}.yaml", EXAM, "multilingual-e5-small")
    env["GRADER_WEBHOOK_ALLOW_PRIVATE"] = "true"  # the receiver listens on 127.0.0.1
    added = grader_cli(env, tmp_path, "platform", "add", "school", "--exam", EXAM,
                       "--webhook-url", receiver.url)  # fmt: skip
    receiver.secret = printed_value(added, "webhook_secret")
    headers = {"Authorization": f"Bearer {printed_value(added, 'api_key')}"}
    answers = [*SIMILAR, *OTHERS]
    store = Store(env["GRADER_DATABASE_URL"])
    here = f"/instructor/exams/{EXAM}/questions/{ESSAY}"
    try:
        with inline_server(env, tmp_path) as base:
            posted = httpx.post(
                f"{base}/v1/submissions", headers=headers, timeout=30,
                json=[{"id": f"a{i}", "exam": EXAM, "question_id": ESSAY, "answer": a,
                       "student": f"s{i}"} for i, a in enumerate(answers)],
            )  # fmt: skip
            assert posted.status_code == 202, posted.text
            wait_for(lambda: len(receiver.ids()) == len(answers), 180, "every first grade")

            with sync_playwright() as p:
                page = browser_page(p, browser_path)
                page.set_default_timeout(90_000)  # the pages' process loads the e5 model
                page.goto(f"{base}/instructor/login")
                page.fill("#key", key)
                page.click("button:has-text('Log in')")

                # 1. edit a criterion: C2's description, a key point, a level, a wrong claim
                page.goto(f"{base}{here}")
                page.click("a.edit-rubric")
                page.fill("input[name=c1_description]", "损失按累积步数缩放（loss除以累积步数）")
                page.fill("textarea[name=c1_key_points]", "loss / accum_steps\n除以累积步数")
                levels = page.locator("textarea[name=c1_levels]")
                levels.fill(levels.input_value() + "\n0.5: 提到缩放但没有写出公式")
                page.fill("textarea[name=c1_wrong_claims]", "不需要缩放损失")
                page.fill("input[name=note]", "C2: the scaling written out")
                page.click("button[value=preview]")
                expect(page.locator("#preview")).to_contain_text("提到缩放但没有写出公式")
                expect(page.locator("pre.diff")).to_contain_text("+      - 除以累积步数")
                screenshot(page, "workbench-rubric")
                page.click("button[value=save]")
                expect(page.locator(".notice.ok")).to_contain_text("Rubric saved")

                # 2. regrade the question against it; the page reloads itself until done
                page.click("form.regrade-rubric-form button")
                expect(page.locator("#regrade-status")).to_contain_text("Done", timeout=180_000)
                moved = int(page.locator("#regrade-changed").inner_text())
                screenshot(page, "workbench-regrade")

                # 3. the group of the five similar answers, with the keyboard alone
                page.goto(f"{base}{here}/groups")
                five = page.locator("section.group").filter(
                    has=page.locator(".head", has_text="5 answer(s)")
                )
                expect(five).to_have_count(1)
                expect(five.locator("input[name=points]")).to_be_focused()
                keys = "11011"
                page.keyboard.type(keys)
                page.keyboard.press("Enter")
                expect(page.locator(".notice.ok")).to_contain_text("5 answer(s) of group")
                expect(five.locator(".group-scored")).to_have_text("5")
                screenshot(page, "workbench-groups")
                page.context.browser.close()

            # every version after the first reached the platform once, signed, in order
            with store.engine.connect() as conn:
                updates = conn.execute(
                    sa.select(sa.func.count()).where(grade_versions.c.version > 1)
                ).scalar()
                causes = dict(conn.execute(
                    sa.select(grade_versions.c.cause, sa.func.count())
                    .where(grade_versions.c.version > 1)
                    .group_by(grade_versions.c.cause)
                ).all())  # fmt: skip

            def updated() -> list[dict]:
                with receiver.lock:
                    return [r for r in receiver.received
                            if r["payload"]["event"] == "grade.updated"]  # fmt: skip

            wait_for(lambda: len(updated()) >= updates, 60, f"{updates} grade.updated")
            got = updated()
            assert len(got) == updates and all(r["valid"] for r in got)
            # the five scores, and a version for each grade the regrade moved (its score or a
            # criterion's points: what a platform records; none of them was scored yet)
            assert causes.get("score") == 5 and causes.get("rubric", 0) == moved
            seen = [(r["submission_id"], r["payload"]["version"]) for r in got]
            assert len(set(seen)) == len(seen)  # once per version
            last: dict[str, dict] = {}
            for r in receiver.received:
                if (
                    r["payload"]["version"]
                    >= last.get(r["submission_id"], {"version": 0})["version"]
                ):
                    last[r["submission_id"]] = r["payload"]
            for sid, payload in last.items():
                now = httpx.get(f"{base}/v1/submissions/{sid}", headers=headers).json()
                assert (now["version"], now["grade"]) == (payload["version"], payload["grade"])
        counts = {"answers": len(answers), "grade.completed": len(answers),
                  "grade.updated": len(got), "by cause": causes,
                  "regrade moved (the judge's grades)": moved,
                  "group keystrokes": len(keys) + 1}  # fmt: skip
        (ROOT / "test-artifacts").mkdir(exist_ok=True)
        (ROOT / "test-artifacts" / "workbench-webhooks.json").write_text(json.dumps(counts))
        print(counts)
    finally:
        receiver.close()
