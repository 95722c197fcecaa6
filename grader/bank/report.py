"""The import report: what the importer could not take from a paper, and where.

Nothing is dropped silently: a question without its key or points, text that belongs to no
question, totals that do not add up — each is an entry naming the file, the printed line, the
question and the text around it, so an instructor can fix the paper or the bank.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel


class Problem(StrEnum):
    NO_KEY = "no_key"  # objective: no answer key; subjective: no reference answer
    BAD_KEY = "bad_key"  # a key that names no option, a missing option, or is not true/false
    NO_POINTS = "no_points"
    NO_OPTIONS = "no_options"  # a choice question without A./B./…
    CUT_OFF = "cut_off"  # the paper stops inside this question
    EMPTY_STEM = "empty_stem"
    COUNT_MISMATCH = "count_mismatch"  # a section declares more or fewer questions
    POINTS_MISMATCH = "points_mismatch"  # points that do not add up to a printed total
    IGNORED_TEXT = "ignored_text"  # text that belongs to no question
    UNUSED_ANSWER = "unused_answer"  # a collected answer for a question that is not there
    EMPTY_SECTION = "empty_section"


class ReportEntry(BaseModel):
    file: str
    line: int
    problem: Problem
    message: str
    question: str | None = None  # the question's id, when the entry is about one question
    context: str = ""  # the paper's text around the place

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"
