"""``grader serve --inline`` grades in a child process: one killed is restarted with a log
line and grades what is queued, nothing twice; a judge that cannot load stops the start with
its error; closing leaves no process behind."""

import logging
import os
import signal

import pytest

from grader.config import Settings
from grader.errors import GraderError
from grader.models import SubmissionStatus
from grader.service import inline_process
from grader.service.inline_process import InlineProcess
from grader.service.store import NewSubmission, Store
from tests.conftest import RUBRICS
from tests.integration.service import wait_for

EXAM = "grad_accum_engineer"
CHOICE = "004-s1-q1"


def _settings(database_url: str, **overrides) -> Settings:
    fields = {"banks": [RUBRICS / f"{EXAM}.yaml"], "judge": "scripted", "embed_model": "none"}
    return Settings(database_url=database_url, **{**fields, **overrides})


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


def test_a_judge_that_cannot_load_stops_the_start(database_url):
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
