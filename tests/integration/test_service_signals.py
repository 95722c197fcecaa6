"""The service's grading step with real embeddings: the cohort comes from the store, per
platform, and signals name the platform's own submission ids."""

from __future__ import annotations

import pytest

from grader.config import EmbeddingSettings, JudgeSettings, ServiceSettings, Settings
from grader.service.batches import grade_stored
from grader.service.exams import Graders
from grader.service.store import Store
from grader.service.store.records import NewSubmission
from tests.conftest import RUBRICS
from tests.integration.conftest import _need
from tests.integration.test_signals import ANSWERS, QID

pytestmark = pytest.mark.slow

EXAM = "grad_accum_engineer"


@pytest.fixture
def store(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'grader.db'}")
    store.migrate()
    return store


def test_copy_found_across_tasks_within_a_platform_only(store):
    _need("sentence_transformers")
    settings = Settings(
        judge=JudgeSettings(backend="scripted"),
        embeddings=EmbeddingSettings(model="multilingual-e5-small"),
        service=ServiceSettings(banks=[RUBRICS / f"{EXAM}.yaml"]),
    )
    graders = Graders.load(settings)
    platforms = []
    for name in ("acme", "other"):
        platforms.append(
            store.accounts.add_platform(name, [EXAM], f"id-{name}", f"hash-{name}", "s")
        )

    def submit(platform_id, external_id, key):
        student, answer = ANSWERS[key]
        store.intake.submit(platform_id, [NewSubmission(external_id, EXAM, QID, answer, student)])
        return [s.id for s in store.queue.cohort(platform_id, EXAM, [QID])]

    acme, other = platforms
    # The original is graded in one task; its copy arrives later, in another.
    first = submit(acme, "A-1", "p1")
    grade_stored(store, graders, first)
    submit(other, "B-1", "p1")  # the same text at another platform: not this cohort
    submit(acme, "A-2", "copy")
    ids = submit(acme, "A-3", "off_zh")
    grade_stored(store, graders, ids)  # A-1 is graded already: skipped
    grade_stored(store, graders, [s.id for s in store.queue.cohort(other, EXAM, [QID])])

    copy = store.intake.submission(acme, "A-2").grade
    assert [d.submission_id for d in copy.signals.near_duplicates] == ["A-1"]
    assert "near_duplicate" not in {r.code for r in copy.review_reasons}  # integrity, not review
    off = store.intake.submission(acme, "A-3").grade
    assert off.signals.off_topic and off.method == "rule" and off.score == 0
    assert store.intake.submission(other, "B-1").grade.signals.near_duplicates == []
    graders.close()
