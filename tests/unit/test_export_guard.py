"""The spreadsheet exports against hostile names: a bank name Excel refuses as a sheet name,
and text that a spreadsheet would run as a formula once it trims or normalises the start."""

from __future__ import annotations

import csv
import json

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from grader.cli import app
from grader.reports.exports import formula_like, sheet_title, spreadsheet_text
from tests.conftest import RUBRICS

runner = CliRunner()
BANK = RUBRICS / "grad_accum_engineer.yaml"

# Each starts a cell that a spreadsheet could evaluate (directly, after trimming the blank,
# after reading the full-width form as ASCII, or as a DDE call).
HOSTILE_STARTS = [
    "=1+1",
    "+1+1",
    "-1+1",
    "@SUM(A1)",
    "\t=1+1",
    "\r=1+1",
    "\n=1+1",
    " =1+1",
    "\u3000=1+1",  # ideographic space
    "\u200b=1+1",  # zero-width space
    "＝1+1",
    "＋1+1",
    "－1+1",
    "＠SUM(A1)",
    "|cmd",
    "｜cmd",
    "﹦1+1",  # small equals sign: NFKC "="
]


@pytest.mark.parametrize("text", HOSTILE_STARTS)
def test_the_guard_quotes_every_formula_start(text):
    assert formula_like(text)
    assert spreadsheet_text(text) == "'" + text


@pytest.mark.parametrize("text", ["alice", "张三", "3.5", "", "a=b", "x|y", "'quoted"])
def test_the_guard_leaves_plain_text_alone(text):
    assert not formula_like(text)
    assert spreadsheet_text(text) == text


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("exams/2026 spring", "exams_2026 spring"),
        ("a\\b?c*d[e]f:g", "a_b_c_d_e_f_g"),
        ("x" * 40, "x" * 31),
        ("'quoted'", "quoted"),
        ("", "grades"),
        ("History", "grades History"),
        ("期末/考试", "期末_考试"),
    ],
)
def test_sheet_titles_are_ones_excel_accepts(name, title):
    assert sheet_title(name) == title


def _grades_and_bank(tmp_path, name: str, students: list[str]):
    """A copy of the example bank under ``name``, and one graded objective answer per
    student."""
    bank = tmp_path / "bank.yaml"
    text = BANK.read_text(encoding="utf-8")
    bank.write_text(text.replace("name: grad_accum_engineer", f"name: {json.dumps(name)}", 1))
    lines = [
        json.dumps(
            {
                "submission_id": f"a{i}",
                "question_id": "004-s2-q1",
                "student": student,
                "status": "graded",
                "score": 2.0,
                "max_score": 2.0,
                "method": "exact",
            }
        )
        for i, student in enumerate(students)
    ]
    grades = tmp_path / "g.jsonl"
    grades.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return grades, bank


def test_xlsx_export_of_a_bank_named_with_a_slash(tmp_path):
    grades, bank = _grades_and_bank(tmp_path, "exams/2026: final [B]", ["s1"])
    out = tmp_path / "book.xlsx"
    result = runner.invoke(
        app, ["export", str(grades), "-b", str(bank), "-f", "xlsx", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert load_workbook(out).active.title == "exams_2026_ final _B_"


@pytest.mark.parametrize("format", ["wide-csv", "long-csv"])
def test_csv_export_quotes_students_that_start_like_formulas(tmp_path, format):
    students = [s.replace("1+1", "HYPERLINK(1)") for s in HOSTILE_STARTS]
    grades, bank = _grades_and_bank(tmp_path, "exam", students)
    out = tmp_path / "book.csv"
    result = runner.invoke(
        app, ["export", str(grades), "-b", str(bank), "-f", format, "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    with out.open(encoding="utf-8-sig", newline="") as handle:  # keep a quoted CR a CR
        rows = list(csv.DictReader(handle))
    assert sorted(r["student"] for r in rows) == sorted("'" + s for s in students)


def test_xlsx_export_keeps_students_that_start_like_formulas_as_text(tmp_path):
    students = [s.replace("1+1", "HYPERLINK(1)") for s in HOSTILE_STARTS]
    grades, bank = _grades_and_bank(tmp_path, "exam", students)
    out = tmp_path / "book.xlsx"
    result = runner.invoke(
        app, ["export", str(grades), "-b", str(bank), "-f", "xlsx", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    cells = [row[0] for row in load_workbook(out).active.iter_rows(min_row=2)]
    assert len(cells) == len(students)
    assert all(c.data_type == "s" and c.quotePrefix for c in cells)
