"""The one exception tree of grader.

    GraderError
     ├── ConfigError          bad settings or missing optional dependency
     ├── BankError            an exam paper or bank file cannot be read (carries file and line)
     ├── RubricError          a rubric file is invalid
     ├── SubmissionError      a submissions file line is invalid (carries file and line)
     ├── PromptError          a prompt template cannot be rendered
     ├── CalibrationError     human scores or a score mapping cannot be used (carries file and line)
     └── JudgeProtocolError   the judge replied, but not with a usable verdict

A judge that cannot be reached is not an exception: its reply carries ``transient=True`` and the
grade says so with the review code ``judge_unavailable`` (``Grade.retryable``).

Lower libraries' exceptions are translated at the boundary (``raise ... from exc``) so callers
only ever need to catch ``GraderError``.
"""

from __future__ import annotations

from pathlib import Path


class GraderError(Exception):
    """Root of every error grader raises on purpose."""


class ConfigError(GraderError):
    """Settings are invalid or an optional dependency is missing."""


class _LocatedError(GraderError):
    """An error that points at a place in a file, so the user can fix the input."""

    def __init__(self, message: str, *, file: str | Path | None = None, line: int | None = None):
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = self.file or ""
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        return f"{where}: {self.message}" if where else self.message


class BankError(_LocatedError):
    """An exam paper or a bank file cannot be parsed."""


class SubmissionError(_LocatedError):
    """A submission is malformed or names a question the bank does not have."""


class RubricError(_LocatedError):
    """A rubric file is invalid (points do not add up, duplicate ids, ...)."""


class CalibrationError(_LocatedError):
    """Human scores, grades or a score mapping cannot be used for calibration."""


class PromptError(GraderError):
    """A prompt template is missing or cannot be rendered."""


class JudgeProtocolError(GraderError):
    """The judge answered, but the reply is not a valid verdict."""
