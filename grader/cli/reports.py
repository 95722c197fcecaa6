"""``grader report`` (the exam report with item analysis) and ``grader export`` (gradebooks)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from grader.cli.app import app, err, fail
from grader.errors import ConfigError, GraderError

GradesArg = Annotated[Path, typer.Argument(help="Grades JSONL written by `grader grade`.")]
BankOpt = Annotated[Path, typer.Option("--bank", "-b", help="Bank YAML the grades belong to.")]
SubmissionsOpt = Annotated[
    Path | None,
    typer.Option(
        help="Submissions JSONL: answer texts for the answers under review, the options chosen "
        "when grades do not record them, and answers not graded yet (counted as unscored)."
    ),
]


class ExportFormat(StrEnum):
    WIDE_CSV = "wide-csv"
    LONG_CSV = "long-csv"
    XLSX = "xlsx"
    LONG_XLSX = "long-xlsx"


def _scores(grades: Path, bank_path: Path, submissions: Path | None):
    from grader.reports.scores import collect
    from grader.reports.sources import load_bank, read_records

    bank = load_bank(bank_path)
    return collect(read_records(grades, bank, submissions), bank)


@app.command()
def report(
    grades: GradesArg,
    bank_path: BankOpt,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for index.html and report.json.")
    ],
    submissions: SubmissionsOpt = None,
) -> None:
    """An exam report: per question score distributions and item analysis (facility,
    discrimination, upper/lower 27 %, distractor tables), Cronbach's alpha and the standard
    error of measurement, per student totals, ranks, section subtotals and answers under
    review. Writes one self-contained index.html (plots embedded) and report.json.

    A question a student did not answer counts 0; an unscored answer is never counted 0: the
    student's total stays open, and the item analysis leaves out those students or those
    questions (whichever keeps more of the table).
    """
    try:
        from grader.reports.exam_report import write_report
        from grader.reports.items import ItemFlag
        from grader.reports.summary import build_report
    except ImportError as exc:
        raise fail(ConfigError(f"{exc.name} is missing: pip install 'grader[reports]'")) from exc
    try:
        scores = _scores(grades, bank_path, submissions)
    except GraderError as exc:
        raise fail(exc) from exc
    result = build_report(scores)
    path = write_report(result, out)
    flagged = [
        q.question_id
        for q in result.questions
        if q.items and set(q.items.flags) - {ItemFlag.NO_VARIANCE}
    ]
    err.print(
        f"wrote {escape(str(path))} and {escape(str(out / 'report.json'))}: "
        f"{len(result.students)} students, "
        f"{len(result.questions)} questions"
    )
    if flagged:
        err.print(
            f"{len(flagged)} question(s) to check (negative or weak discrimination, or a "
            f"suspect key): {escape(', '.join(flagged))}"
        )
    for note in result.notes:
        err.print(f"[yellow]note:[/] {escape(note)}")


@app.command()
def export(
    grades: GradesArg,
    bank_path: BankOpt,
    out: Annotated[Path, typer.Option("--out", "-o", help="The file to write.")],
    format: Annotated[
        ExportFormat,
        typer.Option(
            "--format",
            "-f",
            help="wide-csv / xlsx: one row per student, a column per question, section "
            "subtotals and the total; long-csv / long-xlsx: one row per answer.",
        ),
    ] = ExportFormat.WIDE_CSV,
    submissions: SubmissionsOpt = None,
) -> None:
    """A gradebook for a spreadsheet or the registrar: CSV (UTF-8 with BOM, for Excel) or xlsx
    (frozen header, numbers as numbers, supplied text never run as a formula)."""
    from grader.reports.exports import long_table, wide_table, write_csv, write_xlsx

    try:
        scores = _scores(grades, bank_path, submissions)
    except GraderError as exc:
        raise fail(exc) from exc
    wide = format in (ExportFormat.WIDE_CSV, ExportFormat.XLSX)
    header, rows = wide_table(scores) if wide else long_table(scores)
    out.parent.mkdir(parents=True, exist_ok=True)
    if format in (ExportFormat.WIDE_CSV, ExportFormat.LONG_CSV):
        write_csv(header, rows, out)
    else:
        try:
            write_xlsx(header, rows, out, title=scores.bank.name, freeze="B2" if wide else "A2")
        except ImportError as exc:
            raise fail(ConfigError("xlsx needs openpyxl: pip install 'grader[reports]'")) from exc
    err.print(f"wrote {escape(str(out))}: {len(rows)} rows")
    for note in scores.notes:
        err.print(f"[yellow]note:[/] {escape(note)}")
