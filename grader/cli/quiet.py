"""The libraries' output in a log file, so the terminal shows grader's own lines only.

vLLM logs to stdout, transformers, torch and Python's warnings to stderr, tqdm draws its bars
on stderr, and vLLM's engine core and workers are child processes that write to the stdout
and stderr they inherited. Levels set on this process's loggers cannot catch all of that, so
while models load and run, file descriptors 1 and 2 themselves point at the log file — child
processes inherit it — and the rich consoles write to duplicates of the descriptors the
command started with. The libraries' own switches turn their progress bars off (a bar is
noise in a file); their log levels stay as they are, so the file holds what a bug report needs.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TextIO

from rich.console import Console

# Set only where the user has not: a variable already in the environment wins.
LIBRARY_SWITCHES = {
    "TQDM_DISABLE": "1",  # tqdm reads it when imported: weight loading, dequantizing, encoding
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    # Tokenizers warn once per fork that they disable their threads; say it once, quietly.
    "TOKENIZERS_PARALLELISM": "false",
}
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_path(cache_dir: Path, command: str) -> Path:
    """``<cache>/logs/<command>-YYYYmmdd-HHMMSS.log``: one file per run, never overwritten."""
    folder = Path(cache_dir).expanduser() / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"{command}-{stamp}.log"
    n = 1
    while path.exists():  # two runs in one second
        n += 1
        path = folder / f"{command}-{stamp}-{n}.log"
    return path


@contextlib.contextmanager
def libraries_to(log: Path | None, consoles: Sequence[Console]) -> Iterator[Path | None]:
    """Inside, everything the libraries write goes to ``log`` (None: to the terminal, as they
    would anyway, with Python's INFO records shown too — the ``--verbose`` run)."""
    if log is None:
        with _root_logging(logging.StreamHandler(sys.stderr)):
            yield None
        return
    for name, value in LIBRARY_SWITCHES.items():
        os.environ.setdefault(name, value)
    with log.open("a", encoding="utf-8") as header:
        header.write(f"# {' '.join(sys.argv)}\n# started {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
    with (
        _terminal_consoles(consoles),
        _descriptors_to(log),
        _root_logging(logging.FileHandler(log, encoding="utf-8")),
    ):
        yield log


@contextlib.contextmanager
def _descriptors_to(log: Path) -> Iterator[None]:
    """Point descriptors 1 and 2 at ``log`` (append), and back afterwards."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = [os.dup(1), os.dup(2)]
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
    finally:
        os.close(target)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


@contextlib.contextmanager
def _terminal_consoles(consoles: Sequence[Console]) -> Iterator[None]:
    """Each console writes to a duplicate of the descriptor it writes to now, so moving that
    descriptor to the log file does not move the console."""
    opened: list[TextIO] = []
    for console in consoles:
        terminal = _duplicate(console.file)
        if terminal is not None:
            opened.append(terminal)
            console.file = terminal
    try:
        yield
    finally:
        for console in consoles:
            # The consoles of grader.cli.app were made without a file: they follow
            # sys.stdout and sys.stderr, as test runners that swap those expect.
            console.file = None  # type: ignore[assignment]
        for terminal in opened:
            with contextlib.suppress(Exception):
                terminal.close()


def _duplicate(stream: IO[str]) -> TextIO | None:
    """A new stream on a copy of ``stream``'s descriptor, if it is descriptor 1 or 2; None
    when it is not an OS stream (a test runner's buffer), which the redirect does not touch."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    if fd not in (1, 2):
        return None
    stream.flush()
    return os.fdopen(
        os.dup(fd),
        "w",
        encoding=getattr(stream, "encoding", None) or "utf-8",
        errors="replace",
        buffering=1,
    )


@contextlib.contextmanager
def _root_logging(handler: logging.Handler) -> Iterator[None]:
    """Records of loggers without a handler of their own (sentence-transformers, urllib3,
    Python's warnings) at INFO and up, through ``handler``; the root as it was afterwards."""
    root = logging.getLogger()
    level = root.level
    handler.setFormatter(logging.Formatter(_FORMAT))
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(False)
        root.removeHandler(handler)
        root.setLevel(level)
        handler.close()
