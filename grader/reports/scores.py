"""One exam's answers as a student × question table: the common ground of reports and exports.

Rules, the same everywhere (report, CSV, xlsx, the service's wide export):

- The newest grade of a submission id counts (a retried answer appends a newer record).
- A student with two submissions to one question: the later one counts; a note says how many
  were set aside.
- A question a student did not answer at all (no submission) counts **0** in totals and in
  item statistics, as the paper would; its cell stays empty in exports.
- An answer that was submitted but not scored (``unscored``, ``needs_judge``, ``no_key``, or
  not graded yet in the service) is never a silent 0: its cell is empty and the totals that
  contain it are ``None`` (``partial`` keeps the sum of what was scored).
- Answers without a student id cannot be put in a row: they are left out of the table, with a
  note (``records`` keeps every answer, for one-row-per-answer exports).
- Answers to a question the bank no longer has are left out, with a note.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum

from grader.models import Bank, Grade, GradeStatus, Question


@dataclass(frozen=True)
class AnswerRecord:
    """One submission and its grade (``None``: not graded yet)."""

    submission_id: str
    question_id: str
    student: str | None
    grade: Grade | None
    answer: str | None = None


class Cell(StrEnum):
    SCORED = "scored"
    UNSCORED = "unscored"
    MISSING = "missing"


@dataclass(frozen=True)
class StudentTotals:
    student: str
    total: float | None  # None while any answer is unscored
    partial: float  # the sum of the scored answers (missing ones count 0)
    sections: dict[str, float | None]
    answered: int
    unscored: int
    needs_review: int


@dataclass
class ExamScores:
    bank: Bank
    students: list[str]
    answers: dict[tuple[str, str], AnswerRecord]
    max_scores: dict[str, float | None]
    records: list[AnswerRecord] = field(default_factory=list)  # newest per submission id
    notes: list[str] = field(default_factory=list)

    @property
    def questions(self) -> list[Question]:
        return self.bank.questions

    def record(self, student: str, question_id: str) -> AnswerRecord | None:
        return self.answers.get((student, question_id))

    def cell(self, student: str, question_id: str) -> Cell:
        found = self.answers.get((student, question_id))
        if found is None:
            return Cell.MISSING
        return Cell.SCORED if _score(found) is not None else Cell.UNSCORED

    def score(self, student: str, question_id: str) -> float | None:
        """The points of a scored answer; None when missing or unscored (see ``cell``)."""
        found = self.answers.get((student, question_id))
        return None if found is None else _score(found)

    def sections(self) -> dict[str, list[str]]:
        """Section header → question ids, both in bank order."""
        grouped: dict[str, list[str]] = {}
        for q in self.questions:
            grouped.setdefault(q.section, []).append(q.id)
        return grouped

    def max_total(self) -> float:
        return sum(m for m in self.max_scores.values() if m is not None)

    def totals(self, student: str) -> StudentTotals:
        sections: dict[str, float | None] = {}
        partial, unscored, answered, review = 0.0, 0, 0, 0
        for section, ids in self.sections().items():
            subtotal: float | None = 0.0
            for qid in ids:
                found = self.answers.get((student, qid))
                if found is None:
                    continue  # not answered: 0
                answered += 1
                review += bool(found.grade and found.grade.needs_review)
                points = _score(found)
                if points is None:
                    unscored += 1
                    subtotal = None
                else:
                    partial += points
                    subtotal = None if subtotal is None else subtotal + points
            sections[section] = subtotal
        total = partial if unscored == 0 else None
        return StudentTotals(student, total, partial, sections, answered, unscored, review)


def _score(record: AnswerRecord) -> float | None:
    grade = record.grade
    if grade is None or grade.status is not GradeStatus.GRADED:
        return None
    return grade.score


def natural_key(text: str) -> list[str | int]:
    """Sort key that puts 's10' after 's9'."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def collect(records: list[AnswerRecord], bank: Bank) -> ExamScores:
    """The table of one exam, by the rules in this module's docstring."""
    newest: dict[str, AnswerRecord] = {}
    unknown = 0
    for record in records:
        if bank.get(record.question_id) is None:
            unknown += 1
            continue
        newest.pop(record.submission_id, None)  # re-insert: the newest keeps file order last
        newest[record.submission_id] = record
    answers: dict[tuple[str, str], AnswerRecord] = {}
    anonymous = replaced = 0
    for record in newest.values():
        if record.student is None:
            anonymous += 1
            continue
        key = (record.student, record.question_id)
        replaced += key in answers
        answers[key] = record
    students = sorted({s for s, _ in answers}, key=natural_key)
    kept = list(newest.values())
    scores = ExamScores(bank, students, answers, _max_scores(bank, kept), kept)
    if unknown:
        scores.notes.append(
            f"{unknown} answer(s) to questions not in bank {bank.name!r} are left out."
        )
    if anonymous:
        scores.notes.append(f"{anonymous} answer(s) without a student id are left out.")
    if replaced:
        scores.notes.append(
            f"{replaced} earlier answer(s) to a question the same student answered again are "
            "set aside; the later one counts."
        )
    return scores


def _max_scores(bank: Bank, records) -> dict[str, float | None]:
    """A question's points as graded (``max_score`` most often seen), else the bank's."""
    seen: dict[str, Counter] = {q.id: Counter() for q in bank.questions}
    for record in records:
        if record.grade is not None and record.grade.max_score is not None:
            seen[record.question_id][record.grade.max_score] += 1
    return {
        q.id: seen[q.id].most_common(1)[0][0] if seen[q.id] else q.points for q in bank.questions
    }
