"""Gradebook exports: wide (one row per student), long (one row per answer), CSV or xlsx.

Wide: ``student``, one column per question (bank order: its points, empty when not answered
or not scored), one per section (the subtotal), ``total``, ``answered``, ``unscored``,
``needs_review``. A subtotal or total that contains an unscored answer is empty, never a
guess; a question not answered counts 0 in them (see ``grader.reports.scores``).

Text that platforms or students supply can start like a spreadsheet formula (``=HYPERLINK(…)``),
or like one after a spreadsheet's own clean-up: leading blanks and line breaks trimmed, full-width
``＝＋－＠｜`` read as their ASCII forms, ``|`` starting a DDE call. CSV quotes such text with a
leading ``'`` (``spreadsheet_text``, shared with the service's CSV export); xlsx stores it as a
string cell with Excel's quote prefix, so it is shown as typed and never evaluated. The sheet's
name (the bank's name) loses the characters Excel refuses there and is cut to 31. Numbers stay
numbers. Only the standard library here, and openpyxl when xlsx is asked for, so the service
can offer these formats without the report dependencies.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from grader.reports.scores import ExamScores, natural_key

Value = str | float | int | bool | None
# A cell starting with one of these (after NFKC: full-width forms count) is quoted: the formula
# characters, DDE's "|", and the blanks and control characters a spreadsheet may trim first.
FORMULA_START = frozenset("=+-@|")
_BLANK_CATEGORIES = ("Zs", "Zl", "Zp", "Cc", "Cf")
# Excel refuses these in a sheet name, and a name longer than 31 characters.
_SHEET_NAME_REFUSED = re.compile(r"[\\/?*\[\]:]")
SHEET_NAME_MAX = 31

LONG_COLUMNS = [
    "submission_id", "student", "question_id", "section", "number", "status", "score",
    "max_score", "method", "confidence", "needs_review", "review_codes",
    "expected_error", "review_rank",  # engine.review.queue: the question's ranking
]  # fmt: skip


def spreadsheet_text(text: str | None) -> str:
    """Supplied text that a spreadsheet would run as a formula, quoted with ``'``."""
    text = text or ""
    return "'" + text if formula_like(text) else text


def formula_like(text: str) -> bool:
    """Whether a spreadsheet might read ``text`` as a formula: its first character is a
    formula character (full-width ones too), or a blank or control character (space, tab,
    CR, LF, a zero-width one) that a spreadsheet may trim before reading the rest."""
    if not text:
        return False
    first = text[0]
    if unicodedata.category(first) in _BLANK_CATEGORIES:
        return True
    return unicodedata.normalize("NFKC", first)[:1] in FORMULA_START


def sheet_title(name: str) -> str:
    """``name`` as an xlsx sheet name: ``/ \\ ? * [ ] :`` become ``_``, at most 31 characters,
    never empty, without control characters, and not starting or ending with ``'`` (Excel
    refuses those too)."""
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    title = ILLEGAL_CHARACTERS_RE.sub("_", _SHEET_NAME_REFUSED.sub("_", name))
    title = title[:SHEET_NAME_MAX].strip("'")
    # Empty, or Excel's own "History" sheet: a name Excel refuses.
    return title if title and title.casefold() != "history" else f"grades {title}".strip()


def wide_table(scores: ExamScores) -> tuple[list[str], list[list[Value]]]:
    sections = list(scores.sections())
    header = [
        "student", *(q.id for q in scores.questions), *sections,
        "total", "answered", "unscored", "needs_review",
    ]  # fmt: skip
    rows = []
    for student in scores.students:
        t = scores.totals(student)
        row = [
            student,
            *(scores.score(student, q.id) for q in scores.questions),
            *(t.sections[s] for s in sections),
            t.total, t.answered, t.unscored, t.needs_review,
        ]  # fmt: skip
        rows.append(row)
    return header, rows


def long_table(scores: ExamScores) -> tuple[list[str], list[list[Value]]]:
    order = {q.id: i for i, q in enumerate(scores.questions)}
    records = sorted(
        scores.records,
        key=lambda r: (order[r.question_id], natural_key(r.student or ""), r.submission_id),
    )
    rows = []
    for r in records:
        q, g = scores.bank.question(r.question_id), r.grade
        row = [
            r.submission_id, r.student, r.question_id, q.section, q.number,
            g.status.value if g else "pending", g.score if g else None,
            g.max_score if g else scores.max_scores[r.question_id],
            g.method.value if g else None, g.confidence if g else None,
            g.needs_review if g else None,
            " ".join(x.code for x in g.review_reasons) if g else None,
            g.details.review.expected_error if g and g.details.review else None,
            g.details.review.rank if g and g.details.review else None,
        ]  # fmt: skip
        rows.append(row)
    return LONG_COLUMNS, rows


def csv_lines(header: list[str], rows: Iterable[list[Value]]) -> Iterator[str]:
    """CSV text line by line (for streaming); text cells quoted against formulas."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    table: list[Sequence[Value]] = [header, *rows]
    for row in table:
        writer.writerow([_csv_value(v) for v in row])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


def write_csv(header: list[str], rows: list[list[Value]], path: Path) -> None:
    # utf-8-sig: Excel reads a BOM-less UTF-8 CSV as the local code page (mojibake for 中文).
    with path.open("w", encoding="utf-8-sig", newline="") as handle:
        handle.writelines(csv_lines(header, rows))


def write_xlsx(
    header: list[str], rows: list[list[Value]], path: Path, *, title: str, freeze: str
) -> None:
    """One sheet: bold frozen header (``freeze``: the first cell that scrolls, e.g. "B2"),
    an autofilter, numbers as numbers, supplied text never a formula."""
    from openpyxl import Workbook
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    book = Workbook()
    sheet = book.active
    sheet.title = sheet_title(title)
    table: list[Sequence[Value]] = [header, *rows]
    for values in table:
        sheet.append(
            [ILLEGAL_CHARACTERS_RE.sub("\ufffd", v) if isinstance(v, str) else v for v in values]
        )
    for row in sheet.iter_rows():
        for cell in row:
            if isinstance(cell.value, str) and (cell.data_type == "f" or formula_like(cell.value)):
                cell.data_type = "s"  # openpyxl made "=..." a formula: make it text again
                cell.quotePrefix = True  # and keep Excel from reading it as one on edit
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    sheet.freeze_panes = freeze
    sheet.auto_filter.ref = sheet.dimensions
    for i, name in enumerate(header, 1):
        sheet.column_dimensions[get_column_letter(i)].width = max(8, min(30, len(name) + 2))
    book.save(path)


def _csv_value(value: Value) -> Value:
    if isinstance(value, str):
        return spreadsheet_text(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)  # "2" not "2.0": what a gradebook expects to read
    return "" if value is None else value
