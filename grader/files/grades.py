"""The grades file (JSONL): one Grade per line, appended as graded, resumable.

Each grade is flushed as soon as it exists, so an interrupted run keeps everything graded so
far, and a rerun skips the submission ids already graded. A rerun grades an unscored answer
again and appends its new record; a record later in the file supersedes an earlier one of the
same submission, so every reader takes the last (``read_grades`` does). At the end of a run
``compact_grades`` rewrites the file with one record per answer (a temporary file, then
``os.replace``: a reader sees the old file or the new one, never half of one), so the
superseded records live only as long as a run that was interrupted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from grader.errors import SubmissionError
from grader.models import Grade


def read_grades(path: Path) -> list[Grade]:
    """One grade per submission: its last record in the file, in the order the submissions
    first appear (a rerun's record of an answer supersedes the unscored one before it)."""
    return _latest(_records(path))


def _latest(records: Iterable[Grade]) -> list[Grade]:
    latest: dict[str, Grade] = {}
    for grade in records:
        latest[grade.submission_id] = grade  # a dict keeps the first position of a key
    return list(latest.values())


def _records(path: Path) -> list[Grade]:
    """Every record in the file, superseded ones included. A torn last line (killed
    mid-write, cut at any byte) is left out, and ``GradeWriter`` drops it; a complete last line
    that only lacks its newline counts, and ``GradeWriter`` keeps it. Anything wrong before the
    last line names its line."""
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    # after the last newline: b"" for a whole file, else a line without its newline
    grades = []
    for number, raw in enumerate(lines, 1):
        last = number == len(lines)
        grade = _grade(raw, path, number, torn_ok=last)
        if grade is not None:
            grades.append(grade)
    return grades


def compact_grades(path: Path) -> int:
    """Rewrite ``path`` with one record per submission (``read_grades``), atomically: written
    to a temporary file beside it, synced, then moved over it. Returns how many superseded
    records were dropped; a file without any is left as it is."""
    records = _records(path)
    grades = _latest(records)
    if len(grades) == len(records):
        return 0
    tmp = path.with_name(f".{path.name}.compacting")
    tmp.unlink(missing_ok=True)
    with GradeWriter(tmp) as writer:
        writer.write(grades)
    os.replace(tmp, path)
    _sync_folder(path.parent)
    return len(records) - len(grades)


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _grade(raw: bytes, path: Path, number: int, torn_ok: bool) -> Grade | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if torn_ok:
            return None
        raise SubmissionError(
            f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
            file=path,
            line=number,
        ) from exc
    if not text.strip():
        return None
    try:
        return Grade.model_validate_json(text)
    except ValidationError as exc:
        if torn_ok:
            return None  # the previous run died while writing this line
        raise SubmissionError(
            f"not a grade record: {exc.errors()[0]['msg']}", file=path, line=number
        ) from exc


def _complete_tail(data: bytes) -> bool:
    """Whether the text after the last newline is a whole grade record (only its newline
    was lost), rather than a torn one."""
    tail = data[data.rfind(b"\n") + 1 :]
    try:
        Grade.model_validate_json(tail)
    except ValidationError:
        return False
    return True


class GradeWriter:
    """Appends grades durably; use as a context manager."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self) -> GradeWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_torn_tail()
        self._handle = self.path.open("a", encoding="utf-8")
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def write(self, grades: Iterable[Grade]) -> None:
        for grade in grades:
            self._handle.write(json.dumps(grade.model_dump(mode="json"), ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def _repair_torn_tail(self) -> None:
        """Start appending on a clean line: a torn last line is dropped; a complete one that
        lost only its newline gets it back (``read_grades`` counted it as done)."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if not data or data.endswith(b"\n"):
            return
        if _complete_tail(data):
            with self.path.open("ab") as handle:
                handle.write(b"\n")
        else:
            with self.path.open("r+b") as handle:
                handle.truncate(data.rfind(b"\n") + 1)
