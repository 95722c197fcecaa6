"""`grader report` and `grader export`, end to end on the example exam (scripted judge) and on
a small hand-made grades file with hostile text."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from grader.cli import app
from grader.models import Grade
from grader.reports.summary import ExamReport
from tests.conftest import ROOT, RUBRICS

runner = CliRunner()
BANK = RUBRICS / "grad_accum_engineer.yaml"
EXAMPLE = ROOT / "examples" / "grad_accum_engineer.submissions.jsonl"
HOSTILE = "<script>alert(1)</script>"


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def example_grades(tmp_path_factory) -> list:
    """The README's example exam graded with the scripted judge, as a user would."""
    out = tmp_path_factory.mktemp("example") / "grades.jsonl"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADER_JUDGE", "scripted")
        mp.setenv("GRADER_EMBED_MODEL", "none")
        result = invoke("grade", "--bank", BANK, EXAMPLE, "--out", out)
    assert result.exit_code == 0, result.output
    return out


def _grades(path) -> list[Grade]:
    return [Grade.model_validate_json(x) for x in path.read_text().splitlines()]


def test_report_on_the_example_exam(example_grades, tmp_path):
    result = invoke(
        "report", example_grades, "--bank", BANK, "--submissions", EXAMPLE, "--out", tmp_path
    )
    assert result.exit_code == 0, result.output
    report = ExamReport.model_validate_json((tmp_path / "report.json").read_text())
    grades = _grades(example_grades)
    assert len(report.questions) == 46 and len(report.students) == 4
    for student in report.students:  # totals are the grades' sums (everything scored)
        mine = [g.score for g in grades if g.student == student.student]
        assert student.total == pytest.approx(sum(mine)) and student.answered == 46
    assert [s.rank for s in sorted(report.students, key=lambda s: -s.total)] == [1, 2, 3, 4]
    assert report.test.students == 4 and report.test.alpha is not None
    html = (tmp_path / "index.html").read_text()
    # Self-contained: plots inline, nothing fetched from anywhere.
    assert len(re.findall(r'<img src="data:image/png;base64,', html)) == 46 + 2
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert f"{report.test.alpha:.2f}" in html


def _write_hostile(tmp_path):
    """Two students; s2's essay answer is hostile and under review, a student id is markup,
    and an id starts like a formula."""
    lines, submissions = [], []
    rows = [
        ("a1", "=cmd|' /C calc'!A0", "004-s2-q1", "C", 2.0, {"read_as": "C"}),
        ("a2", "<b>bob</b>", "004-s2-q1", "A", 0.0, {"read_as": "A"}),
        ("e1", "=cmd|' /C calc'!A0", "004-s5-q1", "答案", 3.0, {}),
        ("e2", "<b>bob</b>", "004-s5-q1", HOSTILE, 1.0, {}),
    ]
    for sid, student, qid, answer, score, details in rows:
        review = sid == "e2"
        grade = {
            "submission_id": sid, "question_id": qid, "student": student, "status": "graded",
            "score": score, "max_score": 5.0 if qid.startswith("004-s5") else 2.0,
            "method": "judge" if qid.startswith("004-s5") else "exact", "details": details,
            "needs_review": review,
            "review_reasons": [{"code": "suspected_injection", "message": HOSTILE}] if review else [],
        }  # fmt: skip
        lines.append(json.dumps(grade, ensure_ascii=False))
        submissions.append(
            json.dumps({"id": sid, "question_id": qid, "answer": answer, "student": student})
        )
    (tmp_path / "g.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "s.jsonl").write_text("\n".join(submissions) + "\n", encoding="utf-8")
    return tmp_path / "g.jsonl", tmp_path / "s.jsonl"


def test_report_escapes_answers_and_names(tmp_path):
    grades, submissions = _write_hostile(tmp_path)
    out = tmp_path / "report"
    result = invoke("report", grades, "--bank", BANK, "--submissions", submissions, "--out", out)
    assert result.exit_code == 0, result.output
    html = (out / "index.html").read_text()
    assert "<script" not in html and "<b>bob" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the answer under review, shown
    assert "&lt;b&gt;bob&lt;/b&gt;" in html
    # 44 questions nobody answered: out of the item analysis, said so.
    assert "44 question(s) without any scored answer" in result.output


def test_report_errors_name_the_file(tmp_path):
    bad = tmp_path / "g.jsonl"
    grade = {"submission_id": "x", "question_id": "nope", "status": "graded", "score": 1,
             "max_score": 1, "method": "exact"}  # fmt: skip
    bad.write_text(json.dumps(grade) + "\n" + json.dumps(grade) + "\n")
    result = invoke("report", bad, "--bank", BANK, "--out", tmp_path / "r")
    assert result.exit_code == 2
    assert "g.jsonl" in result.output and "'nope'" in result.output


def test_wide_and_long_csv(example_grades, tmp_path):
    wide, long = tmp_path / "wide.csv", tmp_path / "long.csv"
    assert invoke("export", example_grades, "-b", BANK, "-f", "wide-csv", "-o", wide).exit_code == 0
    assert invoke("export", example_grades, "-b", BANK, "-f", "long-csv", "-o", long).exit_code == 0
    assert wide.read_bytes().startswith(b"\xef\xbb\xbf")  # BOM: Excel reads it as UTF-8
    rows = list(csv.DictReader(io.StringIO(wide.read_text(encoding="utf-8-sig"))))
    grades = _grades(example_grades)
    assert [r["student"] for r in rows] == ["s01", "s02", "s03", "s04"]
    header = list(rows[0])
    assert header[1:47] == [f"004-s{s}-q{n}" for s, k in [(1, 10), (2, 10), (3, 10), (4, 10), (5, 4), (6, 2)] for n in range(1, k + 1)]  # fmt: skip
    assert header[47:53] == ["一、填空題", "二、單項選擇題", "三、多項選擇題", "四、判斷題", "五、簡答題", "六、討論題"]  # fmt: skip
    assert header[53:] == ["total", "answered", "unscored", "needs_review"]
    for row in rows:
        mine = {g.question_id: g.score for g in grades if g.student == row["student"]}
        assert {q: float(row[q]) for q in mine} == mine
        assert float(row["total"]) == pytest.approx(sum(mine.values()))
        assert float(row["五、簡答題"]) == pytest.approx(
            sum(v for q, v in mine.items() if q.startswith("004-s5"))
        )
    answers = list(csv.DictReader(io.StringIO(long.read_text(encoding="utf-8-sig"))))
    assert len(answers) == len(grades) == 184
    first = answers[0]
    assert first["question_id"] == "004-s1-q1" and first["student"] == "s01"
    assert (
        first["status"] == "graded"
        and first["method"] == "exact"
        and first["section"] == "一、填空題"
    )


def test_csv_quotes_formula_like_text_and_leaves_totals_open_for_unscored(tmp_path):
    grades, _ = _write_hostile(tmp_path)
    extra = {"submission_id": "e3", "question_id": "004-s6-q1", "student": "<b>bob</b>",
             "status": "unscored", "score": None, "max_score": 5.0, "method": "judge"}  # fmt: skip
    with grades.open("a") as handle:
        handle.write(json.dumps(extra) + "\n")
    out = tmp_path / "wide.csv"
    assert invoke("export", grades, "-b", BANK, "-f", "wide-csv", "-o", out).exit_code == 0
    rows = {
        r["student"]: r for r in csv.DictReader(io.StringIO(out.read_text(encoding="utf-8-sig")))
    }
    assert set(rows) == {"'=cmd|' /C calc'!A0", "<b>bob</b>"}
    bob = rows["<b>bob</b>"]
    assert bob["004-s6-q1"] == "" and bob["unscored"] == "1" and bob["total"] == ""
    assert bob["六、討論題"] == "" and bob["二、單項選擇題"] == "0" and bob["五、簡答題"] == "1"
    assert bob["004-s1-q1"] == "" and bob["answered"] == "3"  # not answered: empty, counts 0
    assert rows["'=cmd|' /C calc'!A0"]["total"] == "5"


def test_xlsx_reads_back_with_numbers_and_no_formulas(tmp_path):
    grades, _ = _write_hostile(tmp_path)
    out = tmp_path / "book.xlsx"
    result = invoke("export", grades, "-b", BANK, "-f", "xlsx", "-o", out)
    assert result.exit_code == 0, result.output
    sheet = load_workbook(out).active
    assert sheet.freeze_panes == "B2"  # header row (and the student column) stay in view
    header = [c.value for c in sheet[1]]
    assert header[0] == "student" and header[-4:] == [
        "total",
        "answered",
        "unscored",
        "needs_review",
    ]
    cells = {
        row[0].value: dict(zip(header, row, strict=True)) for row in sheet.iter_rows(min_row=2)
    }
    formula = cells["=cmd|' /C calc'!A0"]
    assert formula["student"].data_type == "s" and formula["student"].quotePrefix
    assert formula["004-s5-q1"].value == 3 and formula["004-s5-q1"].data_type == "n"
    assert formula["total"].value == 5 and isinstance(formula["total"].value, (int, float))
    assert cells["<b>bob</b>"]["004-s1-q1"].value is None  # not answered
    # And the file itself has no formula element anywhere.
    import zipfile

    with zipfile.ZipFile(out) as z:
        assert not any("<f>" in z.read(n).decode() for n in z.namelist() if n.endswith(".xml"))
    long = tmp_path / "long.xlsx"
    assert invoke("export", grades, "-b", BANK, "-f", "long-xlsx", "-o", long).exit_code == 0
    sheet = load_workbook(long).active
    assert sheet.freeze_panes == "A2" and sheet.max_row == 5
