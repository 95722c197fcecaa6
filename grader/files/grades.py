"""The grades file (JSONL): append-only, one Grade per line, resumable.

Each grade is flushed as soon as it exists, so an interrupted run keeps everything graded so
far, and a rerun skips the submission ids already in the file.
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
    """Grades already written; a torn last line (killed mid-write) is ignored and rewritten."""
    if not path.exists():
        return []
    grades = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            grades.append(Grade.model_validate_json(raw))
        except ValidationError as exc:
            if number == len(lines):
                break  # the previous run died while writing this line
            raise SubmissionError(
                f"not a grade record: {exc.errors()[0]['msg']}", file=path, line=number
            ) from exc
    return grades


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
        """Drop a partial last line so appending starts on a clean line."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            self.path.write_bytes(data[: data.rfind(b"\n") + 1])
