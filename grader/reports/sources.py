"""Where reports and exports read from: the bank, a grades file, a submissions file.

The only module of ``grader.reports`` that imports the file readers and the answer reading of
the rest of grader, so a move of those modules touches one import block.
"""

from __future__ import annotations

from pathlib import Path

from grader.bank.files import load_bank
from grader.bank.marks import choice_letters, true_false
from grader.errors import SubmissionError
from grader.files.grades import read_grades
from grader.files.submissions import read_submissions
from grader.models import Bank, Question, QuestionType
from grader.reports.scores import AnswerRecord

__all__ = ["BLANK", "NOT_READ", "UNKNOWN", "chosen_option", "load_bank", "read_records"]

BLANK = "(blank)"  # scored 0 by rule: nothing to read
NOT_READ = "(unreadable)"  # answered, but not as an option
UNKNOWN = "(unknown)"  # neither the grade nor a submissions file says what was chosen


def read_records(grades: Path, bank: Bank, submissions: Path | None = None) -> list[AnswerRecord]:
    """Every graded answer, plus (with ``submissions``) the answer texts and the answers not
    graded yet. A grade of a question the bank lacks is an error naming the file."""
    texts = {s.id: s for s in read_submissions(submissions, bank)} if submissions else {}
    records = []
    for grade in read_grades(grades):
        if bank.get(grade.question_id) is None:
            raise SubmissionError(
                f"grade of {grade.submission_id!r} names question {grade.question_id!r}, "
                f"which bank {bank.name!r} does not have",
                file=grades,
            )
        sent = texts.get(grade.submission_id)
        student = grade.student if grade.student is not None else sent.student if sent else None
        answer = sent.answer if sent else None
        records.append(AnswerRecord(grade.submission_id, grade.question_id, student, grade, answer))
    graded = {r.submission_id for r in records}
    records += [
        AnswerRecord(s.id, s.question_id, s.student, None, s.answer)
        for s in texts.values()
        if s.id not in graded
    ]
    return records


def chosen_option(question: Question, record: AnswerRecord) -> str:
    """What a choice or true/false answer chose: letters ("B", "ABD"), "true"/"false", or
    BLANK / NOT_READ / UNKNOWN. From the grade's ``details.read_as``, else the answer text."""
    details = record.grade.details if record.grade else None
    if record.grade and any(r.code == "blank" for r in record.grade.review_reasons):
        return BLANK
    if details is not None and details.has("read_as"):
        read = details.read_as
    elif record.answer is not None:
        if question.type is QuestionType.TRUE_FALSE:
            read = true_false(record.answer)
        else:
            read = choice_letters(record.answer, question.options)
    else:
        return UNKNOWN
    if read is None:
        return NOT_READ
    if isinstance(read, bool):
        return "true" if read else "false"
    return str(read)
