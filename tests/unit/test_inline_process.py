"""``grader serve --inline`` grades in a child process: one killed is restarted with a log
line and grades what is queued, nothing twice; a bank that cannot load stops the start with
its error (the judge loads later, with the first answer that needs it); closing leaves no
process behind."""

import logging
import os
import signal
from pathlib import Path

import pytest

from grader.config import EmbeddingSettings, JudgeSettings, ServiceSettings, Settings
from grader.errors import GraderError
from grader.models import SubmissionStatus
from grader.service import inline_process
from grader.service.inline_process import InlineProcess
from grader.service.store import NewSubmission, Store
from tests.conftest import RUBRICS
from tests.integration.service import wait_for

EXAM = "grad_accum_engineer"
CHOICE = "004-s1-q1"


def _settings(
    database_url: str,
    banks: list[Path] | None = None,
    scripted_latency_s: float = 0.0,
    **service: float,
) -> Settings:
    return Settings(
        service=ServiceSettings(
            database_url=database_url, banks=banks or [RUBRICS / f"{EXAM}.yaml"], **service
        ),
        judge=JudgeSettings(backend="scripted", scripted_latency_s=scripted_latency_s),
        embeddings=EmbeddingSettings(model="none"),
    )


def _graded(store: Store, platform: int, external_id: str) -> bool:
    return store.intake.submission(platform, external_id).status == SubmissionStatus.GRADED


def test_a_killed_grading_process_is_restarted_and_grades_on(database_url, caplog):
    store = Store(database_url)
    store.migrate()
    platform = store.accounts.add_platform("acme", [EXAM], "k1", "h1", "s1", None)
    grading = InlineProcess(_settings(database_url), store, poll_s=0.05)
    first = grading.pid
    try:
        queued = store.intake.submit(platform, [NewSubmission("a", EXAM, CHOICE, "B", None)])
        grading.enqueue([s for s, _ in queued])
        wait_for(lambda: _graded(store, platform, "a"), 60, "the first grade")

        with caplog.at_level(logging.WARNING, logger=inline_process.__name__):
            os.kill(first, signal.SIGKILL)
            wait_for(lambda: grading.pid != first and grading.broker_ok(), 60, "a new process")
        assert any(f"(pid {first}) exited with code -9" in m for m in caplog.messages)
        assert any(f"restarted (pid {grading.pid})" in m for m in caplog.messages)

        queued = store.intake.submit(platform, [NewSubmission("b", EXAM, CHOICE, "A", None)])
        grading.enqueue([s for s, _ in queued])
        wait_for(lambda: _graded(store, platform, "b"), 60, "a grade from the new process")
        exported = list(store.intake.export(platform, EXAM))
        assert sorted(s.external_id for s in exported) == ["a", "b"]
    finally:
        second = grading.pid
        grading.close()
    for pid in (first, second):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # reaped: not even a zombie is left


def test_quick_deaths_wait_longer_before_each_restart(database_url, monkeypatch, caplog):
    """A child that keeps dying at once is restarted after 1, 2, 4 … seconds, not in a loop."""
    store = Store(database_url)
    store.migrate()
    grading = InlineProcess(_settings(database_url), store, poll_s=0.05)
    try:
        with caplog.at_level(logging.ERROR, logger=inline_process.__name__):
            for _ in range(3):
                pid = grading.pid
                os.kill(pid, signal.SIGKILL)
                wait_for(lambda pid=pid: grading.pid != pid, 60, "a restart")
        delays = [m.rsplit("restarting it in ", 1)[1] for m in caplog.messages if "restarting" in m]
        assert delays == ["1 s", "2 s", "4 s"]
    finally:
        grading.close()


def test_a_bank_that_cannot_load_stops_the_start(database_url):
    store = Store(database_url)
    store.migrate()
    settings = _settings(database_url, banks=[RUBRICS / "no-such-bank.yaml"])
    with pytest.raises(GraderError, match=r"could not start: .*no-such-bank"):
        InlineProcess(settings, store)


@pytest.mark.parametrize("nice", [0, 7])
def test_the_grading_process_runs_at_a_lower_cpu_priority(database_url, nice):
    """The intake gets the CPU first when it shares cores with grading."""
    store = Store(database_url)
    store.migrate()
    grading = InlineProcess(_settings(database_url, inline_nice=nice), store, poll_s=0.05)
    try:
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, grading.pid) == min(19, ours + nice)
    finally:
        grading.close()


def test_a_batch_that_runs_out_of_time_is_tried_again_then_set_aside(database_url, caplog):
    """A judge that hangs (60 s a batch, the limit 1 s): the grading process is killed and
    restarted, the answer tried once more, then set aside as failed with the reason; the
    answers after it are graded."""
    store = Store(database_url)
    store.migrate()
    platform = store.accounts.add_platform("acme", [EXAM], "k1", "h1", "s1", None)
    settings = _settings(database_url, scripted_latency_s=60, inline_batch_timeout_s=1)
    grading = InlineProcess(settings, store, poll_s=0.05)
    first = grading.pid
    essay = "Gradient accumulation sums the gradients of several micro-batches before a step."
    try:
        with caplog.at_level(logging.ERROR, logger=inline_process.__name__):
            queued = store.intake.submit(platform, [NewSubmission("e", EXAM, "004-s5-q3", essay)])
            grading.enqueue([s for s, _ in queued])
            stuck = lambda: store.intake.submission(platform, "e").status  # noqa: E731
            wait_for(lambda: stuck() == SubmissionStatus.FAILED, 90, "the answer set aside")
        assert (
            "GRADER_INLINE_BATCH_TIMEOUT_S (1 s) in 2 tries"
            in store.intake.submission(platform, "e").error
        )
        assert sum("graded for over 1 s; stopping it" in m for m in caplog.messages) == 2
        assert grading.pid != first

        queued = store.intake.submit(platform, [NewSubmission("c", EXAM, CHOICE, "B", None)])
        grading.enqueue([s for s, _ in queued])
        wait_for(lambda: _graded(store, platform, "c"), 90, "the next answer graded")
    finally:
        grading.close()
