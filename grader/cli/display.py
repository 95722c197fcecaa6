"""One progress display for a whole ``grader grade`` run: steps with a spinner and the time
they took (preparing and loading models), counters with a bar and an estimate of the time
left (objective answers, signals, judging), and one-line notes above them. A counter whose answers failed (left unscored)
turns red and ends with a red ✗, never a green ✓.

``rich`` draws it live on a terminal; ``plain`` prints a line when a step starts and ends and
one per advance, which is what a log, CI or a test can read (and what ``-v`` uses, where the
libraries' own lines would tear a live display apart). The estimate is the mean rate so far:
the judge's sub-batches are alike, so it settles after the first one.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import timedelta
from enum import StrEnum
from typing import Protocol, Self

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text


class ProgressMode(StrEnum):
    AUTO = "auto"  # rich on a terminal (unless --verbose), plain otherwise
    RICH = "rich"
    PLAIN = "plain"


class Step(Protocol):
    def say(self, message: str) -> None:
        """What the step is doing now (a preparation's phases)."""


class Counter(Protocol):
    def advance(self, n: int) -> None: ...
    def fail(self, n: int) -> None:
        """``n`` of the answers counted ended without a score: the counter shows them, red."""

    def restart(self) -> None:
        """Start the clock again, the count kept: a wait that is not the counted work (the
        judge loading on its first request) stays out of the time shown and the estimate."""


class Display(Protocol):
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> None: ...
    def step(self, description: str) -> contextlib.AbstractContextManager[Step]: ...
    def counter(self, description: str, total: int, unit: str) -> Counter: ...
    def note(self, message: str) -> None:
        """One line above the display; ``message`` may carry rich markup (escape data)."""


def make_display(mode: ProgressMode, console: Console, verbose: bool) -> Display:
    if mode == ProgressMode.RICH or (
        mode == ProgressMode.AUTO and console.is_terminal and not verbose
    ):
        return RichDisplay(console)
    return PlainDisplay(console)


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=round(seconds)))


def _left(elapsed: float, done: float, total: float) -> str | None:
    """The time left at the mean rate so far, or None before there is a rate."""
    if done <= 0 or done >= total or elapsed <= 0:
        return None
    left = elapsed * (total - done) / done
    return _clock(left) if left >= 1 else None


def _failed(description: str, failed: int) -> str:
    """A counter's description once some of its answers failed (markup: data is escaped)."""
    return f"[red]{escape(description)} ({failed} failed)[/]"


class _Status(SpinnerColumn):
    """The spinner, then a green ✓ when a task ends, or a red ✗ when some of it failed."""

    def render(self, task: Task):
        if task.finished and task.fields.get("failed"):
            return Text("✗", style="red")
        return super().render(task)


class _Bar(BarColumn):
    def render(self, task: Task):
        return Text("") if task.fields.get("step") else super().render(task)


class _Count(ProgressColumn):
    def render(self, task: Task) -> Text:
        if task.fields.get("step") or task.total is None:
            return Text("")
        return Text(f"{task.completed:g}/{task.total:g} {task.fields.get('unit', '')}")


class _Left(ProgressColumn):
    def render(self, task: Task) -> Text:
        if task.fields.get("step") or task.total is None or task.finished:
            return Text("")
        left = _left(task.elapsed or 0.0, task.completed, task.total)
        return Text(f"about {left} left" if left else "", style="progress.remaining")


class RichDisplay:
    """A live display on the console's terminal (it does not capture sys.stdout or
    sys.stderr: the libraries' writes go where ``grader.cli.quiet`` sends them)."""

    def __init__(self, console: Console):
        self.progress = Progress(
            _Status(finished_text="[green]✓[/]"),
            TextColumn("{task.description}"),
            _Bar(bar_width=28),
            _Count(),
            TimeElapsedColumn(),
            _Left(),
            console=console,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def __enter__(self) -> RichDisplay:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    @contextlib.contextmanager
    def step(self, description: str) -> Iterator[Step]:
        task = self.progress.add_task(escape(description), total=None, step=True)
        step = _RichStep(self.progress, task, escape(description))
        try:
            yield step
        except BaseException:
            self.progress.update(task, description=f"[red]✗ {escape(description)}[/]")
            self.progress.stop_task(task)
            raise
        self.progress.update(task, description=escape(description), total=1, completed=1)

    def counter(self, description: str, total: int, unit: str) -> Counter:
        task = self.progress.add_task(escape(description), total=total, unit=unit, failed=0)
        return _RichCounter(self.progress, task, description)

    def note(self, message: str) -> None:
        self.progress.console.print(message, highlight=False)


class _RichStep:
    def __init__(self, progress: Progress, task: TaskID, description: str):
        self.progress, self.task, self.description = progress, task, description

    def say(self, message: str) -> None:
        self.progress.update(self.task, description=f"{self.description}: {escape(message)}")


class _RichCounter:
    def __init__(self, progress: Progress, task: TaskID, description: str):
        self.progress, self.task, self.description = progress, task, description
        self.done = self.failed = 0

    def advance(self, n: int) -> None:
        self.done += n
        self.progress.advance(self.task, n)

    def restart(self) -> None:
        self.progress.reset(self.task, completed=self.done)

    def fail(self, n: int) -> None:
        self.failed += n
        description = _failed(self.description, self.failed)
        self.progress.update(self.task, description=description, failed=self.failed)


class PlainDisplay:
    """A line per event, for logs, CI and tests."""

    def __init__(self, console: Console):
        self.console = console

    def __enter__(self) -> PlainDisplay:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def note(self, message: str) -> None:
        self.console.print(message, highlight=False, soft_wrap=True)

    @contextlib.contextmanager
    def step(self, description: str) -> Iterator[Step]:
        started = time.monotonic()
        self.note(f"{escape(description)}…")
        try:
            yield _PlainStep(self, description)
        except BaseException:
            self.note(f"{escape(description)}: failed after {_clock(time.monotonic() - started)}")
            raise
        self.note(f"{escape(description)}: done in {_clock(time.monotonic() - started)}")

    def counter(self, description: str, total: int, unit: str) -> Counter:
        return _PlainCounter(self, description, total, unit)


class _PlainStep:
    def __init__(self, display: PlainDisplay, description: str):
        self.display, self.description = display, description

    def say(self, message: str) -> None:
        self.display.note(escape(f"{self.description}: {message}"))


class _PlainCounter:
    def __init__(self, display: PlainDisplay, description: str, total: int, unit: str):
        self.display, self.description, self.total, self.unit = display, description, total, unit
        self.done = self.failed = 0
        self.started = time.monotonic()

    def advance(self, n: int) -> None:
        self.done += n
        elapsed = time.monotonic() - self.started
        line = f"{self.description}: {self.done}/{self.total} {self.unit}, {_clock(elapsed)}"
        if left := _left(elapsed, self.done, self.total):
            line += f", about {left} left"
        self.display.note(escape(line))

    def restart(self) -> None:
        self.started = time.monotonic()

    def fail(self, n: int) -> None:
        self.failed += n
        self.display.note(
            f"[red]{escape(self.description)}: {self.failed} of {self.done} {escape(self.unit)} "
            "failed[/]"
        )
