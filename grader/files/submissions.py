"""Read submissions files (JSONL) and resolve what each line refers to.

Every problem is reported with the file and line, and the whole file is checked before any
grading starts, so a typo on line 900 does not leave a half-graded exam behind.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from grader.errors import SubmissionError
from grader.files.jsonl import json_lines
from grader.models import Bank, Submission
from grader.text import unstorable


class SubmissionLine(BaseModel):
    """One input line: ``question_id``, or ``question`` (the printed number) when unique;
    ``exam``, when given, names the bank (the field the grading service needs, so that one
    file serves ``grader grade`` and a platform posting it)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    exam: str | None = None
    question_id: str | None = None
    question: str | int | None = None
    answer: str
    student: str | None = None

    @field_validator("id", "exam", "question_id", "question", "answer", "student")
    @classmethod
    def _storable(cls, value: str | int | None) -> str | int | None:
        """Text the grades file (UTF-8) and the service's databases can hold."""
        problem = unstorable(value) if isinstance(value, str) else None
        if problem:
            raise ValueError(problem)
        return value


def resolve_question(bank: Bank, line: SubmissionLine) -> str:
    if line.question_id is not None:
        if bank.get(line.question_id) is None:
            raise ValueError(f"unknown question_id {line.question_id!r} in bank {bank.name!r}")
        return line.question_id
    if line.question is None:
        raise ValueError("needs 'question_id' (or 'question', the printed number)")
    number = str(line.question)
    matches = [q.id for q in bank.questions if q.number == number]
    if not matches:
        raise ValueError(f"no question numbered {number!r} in bank {bank.name!r}")
    if len(matches) > 1:
        raise ValueError(
            f"question number {number!r} is ambiguous ({', '.join(matches[:4])}…): "
            "use 'question_id'"
        )
    return matches[0]


def read_submissions(path: Path, bank: Bank) -> list[Submission]:
    """All submissions of a JSONL file, validated and resolved, or a SubmissionError."""
    submissions: list[Submission] = []
    seen: dict[str, tuple[int, Submission]] = {}
    for number, value in json_lines(path, SubmissionError, "submissions"):
        try:
            line = SubmissionLine.model_validate(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "line"
            raise SubmissionError(f"{field}: {first['msg']}", file=path, line=number) from exc
        try:
            if line.exam is not None and line.exam != bank.name:
                raise ValueError(f"exam {line.exam!r} is not this bank's ({bank.name!r})")
            question_id = resolve_question(bank, line)
        except ValueError as exc:
            raise SubmissionError(str(exc), file=path, line=number) from exc
        submission = Submission(
            id=line.id, question_id=question_id, answer=line.answer, student=line.student
        )
        if submission.id in seen:
            first_line, earlier = seen[submission.id]
            if earlier != submission:
                raise SubmissionError(
                    f"submission id {submission.id!r} already used on line {first_line} "
                    "with different content",
                    file=path,
                    line=number,
                )
            continue  # an exact repeat: grade it once
        seen[submission.id] = (number, submission)
        submissions.append(submission)
    return submissions
