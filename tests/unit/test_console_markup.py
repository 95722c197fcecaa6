"""User text reaches the terminal as text: a student, an id or a stem that looks like rich
markup is printed as written, never parsed (``[/oops]`` crashed the summary, ``[link=…]``
became a link)."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from grader.cli import app
from tests.conftest import RUBRICS

BANK = RUBRICS / "grad_accum_engineer.yaml"
CLOSER = "[/oops]"
LINK = "[link=http://x]y[/link]"


def _flat(output: str) -> str:
    return output.replace("\n", "")


def _grade(tmp_path, rows: list[dict]):
    subs = tmp_path / "subs.jsonl"
    subs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "grades.jsonl"
    args = ["grade", str(subs), "--bank", str(BANK), "--out", str(out), "--judge", "none"]
    return CliRunner().invoke(app, args), out


def test_students_that_look_like_markup_are_printed_as_written(tmp_path):
    rows = [
        {"id": "s1", "question_id": "004-s2-q1", "answer": "C", "student": CLOSER},
        {"id": "s2", "question_id": "004-s2-q2", "answer": "C", "student": LINK},
        {"id": "[/s3]", "question_id": "004-s2-q3", "answer": "", "student": "[bold]b"},
    ]
    result, _ = _grade(tmp_path, rows)
    assert result.exit_code == 0, result.output
    assert CLOSER in result.output
    assert LINK in result.output
    assert "[bold]b" in result.output


def test_a_question_id_that_looks_like_markup_reaches_the_error_printer_intact(tmp_path):
    result, _ = _grade(tmp_path, [{"id": "s1", "question_id": "[/x]", "answer": "C"}])
    assert result.exit_code == 2, result.output
    assert "unknown question_id '[/x]'" in _flat(result.output)
    assert "Traceback" not in result.output


def test_bank_show_prints_stems_and_names_as_written(tmp_path):
    data = yaml.safe_load(BANK.read_text(encoding="utf-8"))
    data["name"] = "[/bank]"
    data["questions"][0]["stem"] = f"{LINK} ______"
    bank = tmp_path / "bank.yaml"
    bank.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    result = CliRunner().invoke(app, ["bank", "show", str(bank)])
    assert result.exit_code == 0, result.output
    assert "[/bank]" in result.output
    assert LINK in _flat(result.output)


def test_calibration_tables_print_ids_and_answers_as_written(tmp_path):
    rows = [
        {"id": f"[/s{i}]", "question_id": "004-s2-q1", "answer": f"{LINK} C" if i else "C"}
        for i in range(4)
    ]
    result, grades = _grade(tmp_path, rows)
    assert result.exit_code == 0, result.output
    human = tmp_path / "human.csv"
    human.write_text(
        "submission_id,question_id,score\n"
        + "".join(f"[/s{i}],004-s2-q1,{i % 2}\n" for i in range(4))
    )
    subs = tmp_path / "subs.jsonl"
    args = ["calibrate", "--human", str(human), "--grades", str(grades)]
    result = CliRunner().invoke(app, [*args, "--submissions", str(subs)])
    assert result.exit_code == 0, result.output
    assert "[/s" in result.output  # the disagreements table names the submissions
    assert "Traceback" not in result.output
