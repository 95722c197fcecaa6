"""``grader serve --inline``'s grading, in a process of its own beside the API.

Python's regex engine, and any other long call into C, holds the interpreter lock for as long
as it runs: one pathological answer graded on a thread of the API's process stalled every
platform's posts, the instructor pages and ``/healthz``. Here the API process keeps the
intake, the pages, the health check and the webhooks' ``Courier`` (it only reads the outbox,
signs small bodies and waits on the network: nothing CPU-heavy); a child process, started
with ``spawn`` (no copied threads, locks or database connections), runs the same
``GradingLoop`` as ``InlineDispatcher`` on the same store. It claims what is queued and
records each grade idempotently, so a child killed mid-batch loses nothing and grades nothing
twice: the rows it held stay ``queued`` and its replacement claims them again.

The API talks to the child over pipes only (a ``multiprocessing.Event`` is left broken when a
process waiting on it is killed): a byte on the doorbell wakes the child's loop, never
blocking a request (a full pipe already holds a wake); the doorbell's end stops it, after
its batch. So the child stops when the API closes, and dies when the API dies (the kernel's
parent-death signal on Linux, the doorbell's end everywhere). A child that dies is restarted
with a log line, after a delay that doubles with each quick death (up to ``_MAX_DELAY_S``),
so a crash loop cannot spin.

A batch still grading after ``GRADER_INLINE_BATCH_TIMEOUT_S`` (a judge that hangs, an answer
no limit caught) gets its process killed and restarted: its answers, still ``queued``, are
tried once more. An answer in two batches that ran out of time is set aside as ``failed``,
with the reason, so one answer cannot stop grading for good.

The child loads the judge when the first answer needs it, as ``grader grade`` does
(``LazyJudge``): the server answers at once, and an exam the rules grade alone never loads a
model. A judge that cannot load is reported and ends the child, which is restarted like any
other (and tries the load again when an answer needs it). The child leads a process group of
its own, and the processes a judge starts (vLLM's engine) are in it: whenever the child ends
(a stop, a restart, a batch out of time) what is left of its group is killed, so no engine
outlives the server.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from grader.config import Settings
from grader.errors import GraderError
from grader.judge import make_judge
from grader.service.courier import Courier
from grader.service.dispatch import GradingLoop
from grader.service.store import Store, StoredSubmission

log = logging.getLogger(__name__)

_CONTEXT = multiprocessing.get_context("spawn")
_STABLE_S = 60.0  # a child that lived this long died by accident, not in a crash loop
_MAX_DELAY_S = 60.0
_STOP_S = 30.0  # what a child gets to finish its batch at shutdown before it is killed
_READY, _FAILED, _GRADED, _BATCH = "ready", "failed", "graded", "batch"
_TRIES = 2  # batches out of time an answer may be in before it is set aside


class InlineProcess:
    """The ``Dispatcher`` of ``grader serve --inline``: grading in a child process, webhooks
    and the child's supervision on one thread of this one.

    Construction returns once the child has loaded its judge and exams, or raises the error
    that stopped it (a bad ``GRADER_JUDGE``, say), as grading in-process did.
    """

    def __init__(self, settings: Settings, store: Store, poll_s: float = 1.0):
        self.settings, self.store, self._poll_s = settings, store, poll_s
        self._closing = threading.Event()
        self._bell_lock = threading.Lock()  # no ring on a doorbell being closed (its fd reused)
        self._failures, self._started_at = 0, 0.0
        self._batch: tuple[list[int], float] | None = None  # ids grading now, since when
        self._overruns: dict[int, int] = {}  # submission id: batches out of time it was in
        self._child, self._events, self._bell = self._start()
        message = self._first_message()
        if message[0] != _READY:
            self._reap()
            raise GraderError(f"the inline grading process could not start: {message[1]}")
        self.courier = Courier(settings.webhooks, settings.service.retry_backoff_s, store)
        self._thread = threading.Thread(target=self._supervise, name="inline-supervisor")
        self._thread.daemon = True
        self._thread.start()

    @property
    def pid(self) -> int | None:
        """The grading process's id (a new one after each restart)."""
        return self._child.pid

    def enqueue(self, submissions: list[StoredSubmission]) -> None:
        with self._bell_lock, contextlib.suppress(OSError):  # full: a wake is pending already;
            self._bell.send_bytes(b"")  # closed: the child is restarting and will look anyway

    def announce(self, deliveries: list[int]) -> None:
        """The courier looks at the outbox now (it would within ``poll_s`` anyway)."""
        if deliveries:
            self.courier.wake()

    def regrade(self, job_id: int) -> None:
        self.enqueue([])  # the child's loop takes waiting regrades after the queued answers

    def broker_ok(self) -> bool:
        return self._child.is_alive()

    def queue_depth(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        """Let the child finish its batch and exit (killed after ``_STOP_S``), then let the
        webhooks in flight end."""
        self._closing.set()
        self._thread.join()  # it reaps the child before it ends
        self.courier.close()

    def _start(self) -> tuple[BaseProcess, Connection, Connection]:
        events, events_child = _CONTEXT.Pipe(duplex=False)
        bell_child, bell = _CONTEXT.Pipe(duplex=False)
        child = _CONTEXT.Process(
            target=child_main,
            args=(self.settings, bell_child, events_child, self._poll_s),
            name="grader-inline",  # not daemonic: a model judge may start processes of its own
        )
        child.start()
        events_child.close()  # the child holds the only writer: its death reads as end-of-file
        bell_child.close()
        os.set_blocking(bell.fileno(), False)
        self._started_at = time.monotonic()
        return child, events, bell

    def _first_message(self) -> tuple[str, str]:
        """Wait (as long as a model judge takes to load) for the child to say it is ready."""
        while not self._events.poll(1.0):
            if not self._child.is_alive():
                break
        try:
            return self._events.recv()
        except EOFError:
            self._child.join(5)
            return _FAILED, f"it exited with code {self._child.exitcode}"

    def _supervise(self) -> None:
        """Wake the courier when the child has graded (it also looks by itself);
        restart the child when it dies. The thread that started a child outlives it (the
        kernel's parent-death signal follows the thread), so this one reaps it at the end."""
        try:
            self._watch()
        finally:
            self._reap()

    def _watch(self) -> None:
        while not self._closing.is_set():
            try:
                while self._events.poll(self._poll_s):
                    kind, detail = self._events.recv()  # mostly "graded"
                    if kind == _FAILED:  # a restarted child that could not load
                        log.error("the inline grading process could not start: %s", detail)
                    self._batch = (detail, time.monotonic()) if kind == _BATCH else None
                    if not self._events.poll(0):
                        break
            except (EOFError, OSError):  # the child is gone
                self._child.join(5)
            self._stop_overrun()
            self.courier.wake()
            if not self._child.is_alive() and not self._closing.is_set():
                self._restart()

    def _stop_overrun(self) -> None:
        """Kill a child whose batch ran out of time; set aside its answers on their last try."""
        limit = self.settings.service.inline_batch_timeout_s
        if self._batch is None or time.monotonic() - self._batch[1] <= limit:
            return
        ids, self._batch = self._batch[0], None
        log.error("a batch of %d answer(s) graded for over %.0f s; stopping it", len(ids), limit)
        self._end_child()
        for i in ids:
            self._overruns[i] = self._overruns.get(i, 0) + 1
        spent = [i for i in ids if self._overruns[i] >= _TRIES]
        if spent:
            reason = (
                f"grading did not finish within GRADER_INLINE_BATCH_TIMEOUT_S ({limit:g} s) in "
                f"{_TRIES} tries: set aside for review"
            )
            try:
                self.store.queue.dead_letter("inline grading", spent, reason)
            except Exception:  # the database is away: they stay queued, and come back here
                log.exception("could not set aside %d answer(s)", len(spent))
                return
            log.error("%d answer(s) set aside: %s", len(spent), reason)

    def _restart(self) -> None:
        self._end_child()  # what a dead child left running: a judge's engine
        self._events.close()
        with self._bell_lock:
            self._bell.close()
        lived = time.monotonic() - self._started_at
        self._failures = 0 if lived >= _STABLE_S else self._failures + 1
        delay = min(_MAX_DELAY_S, 2.0 ** (self._failures - 1)) if self._failures else 0.0
        log.error(
            "the inline grading process (pid %s) exited with code %s after %.0f s; "
            "restarting it in %.0f s",
            self._child.pid, self._child.exitcode, lived, delay,
        )  # fmt: skip
        if self._closing.wait(delay):
            return
        child, self._events, bell = self._start()
        with self._bell_lock:
            self._child, self._bell = child, bell
        log.warning("the inline grading process restarted (pid %s)", self._child.pid)

    def _reap(self) -> None:
        with self._bell_lock:
            self._bell.close()  # the child ends its batch and exits
        self._child.join(_STOP_S)
        if self._child.is_alive():
            log.error("the inline grading process did not stop in %.0f s; killing it", _STOP_S)
        self._end_child()
        self._events.close()

    def _end_child(self) -> None:
        """Kill the child, if it still runs, and every process left in its group."""
        pid = self._child.pid
        if self._child.is_alive():
            self._child.kill()
        self._child.join(5)
        if pid is not None and hasattr(os, "killpg"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)  # the group the child led: its engine processes


def child_main(settings: Settings, bell: Connection, events: Connection, poll_s: float) -> None:
    """The grading process, at a lower CPU priority (``GRADER_INLINE_NICE``): load the exams
    (the judge when an answer needs it), say so, grade until the doorbell ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group: the API stops us
    _die_with_parent()
    if hasattr(os, "setpgid"):
        os.setpgid(0, 0)  # a group of its own, which the judge's processes join
    if settings.service.inline_nice and hasattr(os, "nice"):
        os.nice(settings.service.inline_nice)  # the intake first: it shares the cores with grading
    wake, stop = threading.Event(), threading.Event()
    threading.Thread(target=_listen, args=(bell, wake, stop), name="doorbell", daemon=True).start()
    from grader.service.exams import Graders

    def judge():  # built when the first answer needs it; a judge that cannot load ends us
        try:
            return make_judge(settings)
        except Exception as exc:
            events.send((_FAILED, f"the judge could not load: {_reason(exc)}"))
            os._exit(3)  # nothing of the batch was committed: its answers stay queued

    try:
        store = Store(settings.service.database_url)
        graders = Graders.load(settings, build_judge=judge)
    except Exception as exc:  # the parent prints it and exits
        events.send((_FAILED, _reason(exc)))
        return
    events.send((_READY, ""))
    loop = GradingLoop(
        settings,
        store,
        graders,
        after_batch=lambda: events.send((_GRADED, "")),
        before_batch=lambda ids: events.send((_BATCH, ids)),
    )
    try:
        loop.run(wake, stop, poll_s)
    finally:
        graders.close()


def _reason(error: Exception) -> str:
    return str(error) if isinstance(error, GraderError) else repr(error)


def _listen(bell: Connection, wake: threading.Event, stop: threading.Event) -> None:
    """Each ring wakes the loop; the doorbell's end (the parent closing it, or gone) stops it."""
    try:
        while True:
            bell.recv_bytes()
            wake.set()
    except (EOFError, OSError):
        stop.set()
        wake.set()


def _die_with_parent() -> None:
    """On Linux, have the kernel kill this process when its parent ends, however it ends
    (SIGKILL included, and while a long call here holds the interpreter lock)."""
    if sys.platform == "linux":
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
        parent = multiprocessing.parent_process()
        if parent is None or os.getppid() != parent.pid:
            os._exit(1)  # the parent ended before the signal was set
