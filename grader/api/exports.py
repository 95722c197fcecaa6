"""An exam's grades for its platform, streamed: JSON lines, CSV, or wide CSV (a student a row);
and its grades' changes, as the changes feed lists them."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from grader.api.schemas import ChangeOut, ChangeSummary, SubmissionOut
from grader.models import Bank
from grader.reports.exports import csv_lines, spreadsheet_text, wide_table
from grader.reports.scores import AnswerRecord, collect
from grader.service.store import GradeChange, StoredSubmission


def submission_out(s: StoredSubmission) -> SubmissionOut:
    return SubmissionOut(
        id=s.external_id,
        exam=s.exam,
        question_id=s.question_id,
        student=s.student,
        status=s.status,
        submitted_at=s.created_at,
        graded_at=s.graded_at,
        error=s.error,
        grade=s.grade,
        version=s.version,
    )


def jsonl(rows: Iterator[StoredSubmission]) -> Iterator[str]:
    for s in rows:
        yield submission_out(s).model_dump_json(exclude={"answer"}) + "\n"


CSV_COLUMNS = [
    "submission_id", "exam", "question_id", "student", "status", "score", "max_score",
    "method", "confidence", "needs_review", "review_codes", "graded_at", "version",
]  # fmt: skip


def csv_rows(rows: Iterator[StoredSubmission]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for s in rows:
        g = s.grade
        writer.writerow(
            [
                spreadsheet_text(s.external_id), s.exam, s.question_id, spreadsheet_text(s.student), s.status,
                "" if g is None or g.score is None else g.score,
                "" if g is None or g.max_score is None else g.max_score,
                g.method.value if g else "", "" if g is None or g.confidence is None else g.confidence,
                g.needs_review if g else "", " ".join(r.code for r in g.review_reasons) if g else "",
                s.graded_at.isoformat() if s.graded_at else "", s.version or "",
            ]
        )  # fmt: skip
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


def wide_csv_rows(rows: Iterator[StoredSubmission], bank: Bank) -> Iterator[str]:
    records = [AnswerRecord(s.external_id, s.question_id, s.student, s.grade) for s in rows]
    return csv_lines(*wide_table(collect(records, bank)))


def change_out(change: GradeChange) -> ChangeOut:
    summary = change.summary()
    return ChangeOut(
        cursor=change.cursor,
        submission_id=change.submission_id,
        version=change.version,
        change=ChangeSummary.model_validate(summary),
        grade=change.grade,
    )
