"""Malformed submissions JSONL and calibration CSV files: `file:line: what is wrong`, never a
traceback. Explicit cases for each way a line can break, then hypothesis on arbitrary bytes."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from grader.bank.files import load_bank
from grader.calibrate import read_answers, read_human_scores
from grader.cli import app
from grader.errors import CalibrationError, GraderError, SubmissionError
from grader.files.submissions import read_submissions
from tests.conftest import RUBRICS

BANK_FILE = RUBRICS / "grad_accum_engineer.yaml"
BANK = load_bank(BANK_FILE)
GOOD = b'{"id": "s1", "question_id": "004-s2-q1", "answer": "C"}\n'
HEADER = b"submission_id,question_id,score\n"

BAD_LINES = {
    "not UTF-8": (b'{"id": "s2", "question_id": "004-s2-q1", "answer": "\xff"}', "not UTF-8"),
    "a 5,000-digit number": (
        b'{"id": "s2", "question": ' + b"9" * 5000 + b', "answer": "C"}',
        "a number too long to read",
    ),
    "deep nesting": (b"[" * 100_000, "nested too deeply"),
    "a lone surrogate": (
        b'{"id": "s2", "question_id": "004-s2-q1", "answer": "\\ud800"}',
        "answer: Value error, contains a lone surrogate",
    ),
    "a lone surrogate in the id": (
        b'{"id": "\\udfff", "question_id": "004-s2-q1", "answer": "C"}',
        "id: ",  # pydantic's own refusal (min_length), or ours
    ),
}


@pytest.mark.parametrize("case", BAD_LINES)
def test_a_broken_submissions_line_names_file_and_line(tmp_path, case):
    line, problem = BAD_LINES[case]
    path = tmp_path / "subs.jsonl"
    path.write_bytes(GOOD + b"\n" + line + b"\n")
    with pytest.raises(SubmissionError) as caught:
        read_submissions(path, BANK)
    assert str(caught.value).startswith(f"{path}:3: "), str(caught.value)
    assert problem in str(caught.value)


def test_a_line_for_another_exam_is_refused_and_this_exams_name_is_read(tmp_path):
    """The bundled examples name their exam (what the service needs): the bank's own name is
    read, another one is refused with the line."""
    path = tmp_path / "subs.jsonl"
    mine = b'{"id": "s1", "exam": "grad_accum_engineer", "question_id": "004-s2-q1", "answer": "C"}'
    path.write_bytes(mine + b"\n")
    assert [s.id for s in read_submissions(path, BANK)] == ["s1"]
    path.write_bytes(mine + b"\n" + mine.replace(b"_engineer", b"").replace(b"s1", b"s2") + b"\n")
    with pytest.raises(SubmissionError) as caught:
        read_submissions(path, BANK)
    assert str(caught.value) == (
        f"{path}:2: exam 'grad_accum' is not this bank's ('grad_accum_engineer')"
    )


@pytest.mark.parametrize("case", BAD_LINES)
def test_a_broken_line_in_the_calibration_submissions_names_file_and_line(tmp_path, case):
    line, _ = BAD_LINES[case]
    path = tmp_path / "subs.jsonl"
    path.write_bytes(GOOD + line + b"\n")
    with pytest.raises(CalibrationError) as caught:
        read_answers(path)
    assert str(caught.value).startswith(f"{path}:2: "), str(caught.value)


@pytest.mark.parametrize("case", ["not UTF-8", "deep nesting"])
def test_grader_grade_prints_the_place_not_a_traceback(tmp_path, case):
    path = tmp_path / "subs.jsonl"
    path.write_bytes(GOOD + BAD_LINES[case][0] + b"\n")
    args = ["grade", str(path), "--bank", str(BANK_FILE), "--out", str(tmp_path / "g.jsonl")]
    result = CliRunner().invoke(app, [*args, "--judge", "none"])
    assert result.exit_code == 2
    assert f"{path}:2: " in result.output.replace("\n", "")
    assert "Traceback" not in result.output


def test_csv_not_utf8_names_line_and_column(tmp_path):
    path = tmp_path / "human.csv"
    path.write_bytes(HEADER + b"s1,q1,3\ns2,q\xe91,4\n")  # Latin-1 é
    with pytest.raises(CalibrationError) as caught:
        read_human_scores(path)
    assert str(caught.value).startswith(f"{path}:3: not UTF-8 (byte 0xe9 at column 5)")


def test_csv_cell_over_the_csv_modules_limit_names_its_row(tmp_path):
    path = tmp_path / "human.csv"
    long_note = b'"' + b"x" * 131_073 + b'"'
    path.write_bytes(b"submission_id,question_id,score,note\ns1,q1,3,\ns2,q1,4," + long_note)
    with pytest.raises(CalibrationError) as caught:
        read_human_scores(path)
    assert str(caught.value).startswith(f"{path}:3: not a readable CSV row: a cell longer than")


FUZZ = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
# Lines built from JSON-ish pieces and raw bytes, so the fuzz reaches json.loads and pydantic
# as well as the UTF-8 decoder.
PIECES = st.sampled_from(
    [b"{", b"}", b"[", b"]", b'"', b":", b",", b"\\ud800", b"\\u0000", b"\xff", b"\xc3",
     b'"id"', b'"answer"', b'"question"', b'"question_id"', b'"004-s2-q1"', b"9" * 4400,
     b"\n", b"\r", b"null", b"1e999", b"-0", "é".encode(), b" "]
)  # fmt: skip
LINES = st.lists(st.one_of(PIECES, st.binary(max_size=8)), max_size=30).map(b"".join)


def _located_or_fine(call, path) -> None:
    try:
        call()
    except GraderError as exc:
        assert getattr(exc, "file", None) == str(path), exc
        assert getattr(exc, "line", None) is not None or "cannot read" in str(exc), exc


@FUZZ
@given(body=LINES)
def test_fuzzed_submissions_file_is_read_or_refused_with_a_place(tmp_path, body):
    path = tmp_path / "subs.jsonl"
    path.write_bytes(GOOD + body)
    _located_or_fine(lambda: read_submissions(path, BANK), path)
    _located_or_fine(lambda: read_answers(path), path)


CELLS = st.lists(
    st.one_of(
        st.sampled_from([b",", b'"', b"\n", b"\r\n", b"\x00", b"\xff", b"3", b"-1", b"nan"]),
        st.binary(max_size=8),
        st.text(max_size=8).map(lambda t: t.encode("utf-8", "surrogatepass")),
    ),
    max_size=30,
).map(b"".join)


@FUZZ
@given(body=CELLS)
def test_fuzzed_calibration_csv_is_read_or_refused_with_a_place(tmp_path, body):
    path = tmp_path / "human.csv"
    path.write_bytes(HEADER + body)
    _located_or_fine(lambda: read_human_scores(path), path)


def test_the_fuzz_strategies_reach_valid_files(tmp_path):
    """The fuzz is not only refusals: a well-formed line parses to a submission."""
    path = tmp_path / "subs.jsonl"
    path.write_bytes(
        GOOD + json.dumps({"id": "s2", "question_id": "004-s2-q2", "answer": "é"}).encode()
    )
    assert [s.id for s in read_submissions(path, BANK)] == ["s1", "s2"]


def test_a_yaml_alias_in_a_bank_or_rubric_is_refused_with_file_and_line(tmp_path):
    """An alias repeats a node without copying it: a 72 KB bank stood for 2.4 GB once read."""
    from grader.engine.reading.rubrics import load_rubric
    from grader.errors import BankError, RubricError

    text = BANK_FILE.read_text(encoding="utf-8")
    bank = tmp_path / "bank.yaml"
    bank.write_text("shared: &many [a, b, c]\n" + text + "\nextra: *many\n", encoding="utf-8")
    with pytest.raises(BankError) as caught:
        load_bank(bank)
    lines = text.count("\n") + 3
    assert str(caught.value).startswith(f"{bank}:{lines}: "), str(caught.value)
    assert "aliases are not allowed (*many)" in str(caught.value)
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text("base: &b {weight: 1}\ncriteria:\n  - *b\n", encoding="utf-8")
    with pytest.raises(RubricError, match=r"rubric.yaml:3: .*aliases are not allowed \(\*b\)"):
        load_rubric(rubric, BANK)


def test_a_key_written_twice_in_a_rubric_is_refused_at_its_second_line(tmp_path):
    """The second ``wrong_claims:`` of a criterion would silently drop the first list."""
    from grader.engine.reading.rubrics import load_rubric
    from grader.errors import RubricError

    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        "question_id: q1\npoints: 2\ncriteria:\n  - id: C1\n    points: 2\n"
        "    wrong_claims:\n      - claim: a\n    wrong_claims:\n      - claim: b\n",
        encoding="utf-8",
    )
    with pytest.raises(
        RubricError, match=r"rubric.yaml:8: invalid YAML: 'wrong_claims' is written twice"
    ):
        load_rubric(rubric, BANK)


def test_a_rubric_problem_repeated_in_every_group_is_reported_once(tmp_path):
    from grader.engine.reading.rubrics import load_rubric
    from grader.errors import RubricError

    rubric = tmp_path / "004-s5-q1.yaml"
    rubric.write_text(
        "question_id: 004-s5-q1\npoints: 5\ncriteria:\n  - id: C1\n    description: x\n    points: 5\n"
        '    wrong_claims:\n      - claim: ab\n        when: [["x||y", "x||y"]]\n',
        encoding="utf-8",
    )
    with pytest.raises(RubricError) as caught:
        load_rubric(rubric, BANK)
    assert str(caught.value).count("an empty term") == 1, str(caught.value)
