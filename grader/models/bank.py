"""Questions and banks: what an exam asks, and how objective answers are keyed."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import (
    Field,
    model_validator,
)

from grader.models.base import _Model


class QuestionType(StrEnum):
    SINGLE_CHOICE = "single_choice"
    MULTIPLE_CHOICE = "multiple_choice"
    TRUE_FALSE = "true_false"
    FILL_BLANK = "fill_blank"
    SHORT_ANSWER = "short_answer"
    CASE_STUDY = "case_study"
    DISCUSSION = "discussion"

    @property
    def objective(self) -> bool:
        """Objective questions are graded exactly, without the judge."""
        return self in _OBJECTIVE


_OBJECTIVE = {
    QuestionType.SINGLE_CHOICE,
    QuestionType.MULTIPLE_CHOICE,
    QuestionType.TRUE_FALSE,
    QuestionType.FILL_BLANK,
}


class MultipleChoiceCredit(StrEnum):
    """How a multiple-choice answer with some of the right letters scores (a setting)."""

    ALL_OR_NOTHING = "all_or_nothing"  # 少选、错选均不得分
    PARTIAL = "partial"  # correct letters / all correct letters, zero with any wrong letter
    HALF = "half"  # half the points for a correct subset, zero with any wrong letter


class SourceRef(_Model):
    """Where a question came from, so an instructor can find it in the paper."""

    file: str
    line: int


class Question(_Model):
    id: str = Field(description="Unique, stable id within the bank, e.g. '000-s1-q3'.")
    number: str = Field(description="The number as printed in the paper (restarts per section).")
    section: str = Field(description="The section header as printed, e.g. '一、單項選擇題'.")
    type: QuestionType
    stem: str
    options: dict[str, str] = Field(default_factory=dict, description="Letter -> option text.")
    answer: str | bool | None = Field(
        default=None,
        description="Letters ('BCD') for choice questions, true/false for true-false, text otherwise.",
    )
    blanks: list[list[str]] = Field(
        default_factory=list,
        description="Fill-in only: accepted alternatives for each blank, in order.",
    )
    explanation: str | None = None
    points: float | None = Field(default=None, ge=0)
    incomplete: bool = Field(default=False, description="Text or answer cut off in the paper.")
    language: Literal["zh", "en"] = "zh"
    source: SourceRef | None = None


class Bank(_Model):
    """A question bank: the questions of one or more imported papers."""

    name: str
    papers: list[str] = Field(default_factory=list)
    questions: list[Question]

    @model_validator(mode="after")
    def _unique_ids(self) -> Bank:
        seen: set[str] = set()
        for q in self.questions:
            if q.id in seen:
                raise ValueError(f"duplicate question id {q.id!r}")
            seen.add(q.id)
        return self

    def get(self, question_id: str) -> Question | None:
        return next((q for q in self.questions if q.id == question_id), None)

    def question(self, question_id: str) -> Question:
        """The question of an answer already checked against this bank (stored, or read
        with it); KeyError when the bank has no such question."""
        found = self.get(question_id)
        if found is None:
            raise KeyError(question_id)
        return found
