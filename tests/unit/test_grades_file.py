"""The grades file resumes from a cut at any byte: nothing graded is lost, nothing is kept twice.

A run killed at any moment leaves a prefix of the file it would have written. Resuming is what
``grader grade`` does: read the grades already there, then append the rest. For every prefix,
the resumed file must be the complete file, byte for byte.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from grader.cli import app
from grader.errors import SubmissionError
from grader.files.grades import GradeWriter, read_grades
from grader.models import Grade, GradeStatus, Method
from tests.conftest import RUBRICS, objective_submissions


def _grades() -> list[Grade]:
    # multi-byte text, so cuts also land inside a character
    return [
        Grade(
            submission_id=f"s{i}",
            question_id="004-s5-q3",
            student="学生" + str(i),
            status=GradeStatus.GRADED,
            score=float(i),
            max_score=5.0,
            method=Method.JUDGE,
            feedback="梯度累积：每个micro-batch的loss除以累积步数。" * (i + 1),
            criteria=[],
        )
        for i in range(4)
    ]


GRADES = _grades()


def _complete_file() -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "complete.jsonl"
        with GradeWriter(path) as writer:
            writer.write(GRADES)
        return path.read_bytes()


COMPLETE = _complete_file()


def resume(path) -> list[str]:
    """What `grader grade` does on a rerun: skip the ids in the file, append the rest."""
    done = {g.submission_id for g in read_grades(path)}
    with GradeWriter(path) as writer:
        writer.write([g for g in GRADES if g.submission_id not in done])
    return [g.submission_id for g in read_grades(path)]


@pytest.fixture
def complete() -> bytes:
    return COMPLETE


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(0, len(COMPLETE)))
@example(cut=len(COMPLETE) - 1)  # the last line complete, its newline lost
@example(cut=0)
def test_resuming_from_a_cut_at_any_byte_restores_the_whole_file(tmp_path, cut):
    _check_cut(tmp_path, COMPLETE, cut)


def _check_cut(tmp_path, complete: bytes, cut: int) -> None:
    path = tmp_path / "grades.jsonl"
    path.write_bytes(complete[:cut])
    assert resume(path) == [g.submission_id for g in GRADES], cut
    assert path.read_bytes() == complete, cut


@pytest.mark.parametrize("at", ["each line end", "each newline", "each character start"])
def test_the_cuts_that_matter_most(tmp_path, complete, at):
    """Explicitly: every line without its newline (the lost-grade bug), every newline, and a
    cut inside every multi-byte character of the first line."""
    ends = [i for i, b in enumerate(complete) if b == ord("\n")]
    cuts = {
        "each line end": ends,  # a complete last line, no trailing newline
        "each newline": [e + 1 for e in ends],
        "each character start": [
            i for i in range(1, ends[0]) if complete[i] & 0xC0 == 0x80
        ],  # inside a UTF-8 sequence
    }[at]
    for cut in cuts:
        _check_cut(tmp_path, complete, cut)


def test_invalid_utf8_inside_the_file_names_the_line(tmp_path, complete):
    lines = complete.split(b"\n")
    lines[1] = lines[1][:10] + b"\xff\xfe" + lines[1][10:]
    path = tmp_path / "grades.jsonl"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(SubmissionError) as caught:
        read_grades(path)
    assert str(caught.value).startswith(f"{path}:2: not UTF-8")


def test_grader_grade_keeps_a_last_grade_written_without_its_newline(tmp_path):
    """The reported bug, end to end: a rerun counted the last grade as done and then cut it."""
    subs = objective_submissions(tmp_path / "subs.jsonl")
    out = tmp_path / "grades.jsonl"
    bank = RUBRICS / "grad_accum_engineer.yaml"
    runner = CliRunner()
    args = ["grade", str(subs), "--bank", str(bank), "--out", str(out), "--judge", "none"]
    assert runner.invoke(app, args).exit_code == 0
    out.write_bytes(out.read_bytes().rstrip(b"\n"))  # killed just before the last newline
    assert runner.invoke(app, args).exit_code == 0
    ids = [json.loads(x)["submission_id"] for x in out.read_text().splitlines()]
    assert ids == ["s1", "s2", "s3", "s4", "s5"]
