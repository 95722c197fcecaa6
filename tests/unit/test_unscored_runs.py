"""A ``grader grade`` run that leaves answers unscored is a failure, and says so: a non-zero
exit, the cause on screen, the progress in red. The rerun grades those answers again and the
grades file keeps one record per answer (the issue: a run that lost its judge's worker to the
kernel's out-of-memory killer looked like a success, and its rerun appended beside the stale
records)."""

from __future__ import annotations

import io
import json
from collections import Counter

from rich.console import Console
from typer.testing import CliRunner

import grader.judge
from grader.cli import app
from grader.cli.display import PlainDisplay, RichDisplay
from grader.cli.grading import EXIT_UNSCORED
from grader.files.grades import GradeWriter, compact_grades, read_grades
from grader.judge.engine_death import Ending, MemoryBudget, death_message
from grader.judge.scripted import ScriptedJudge
from grader.models import Grade, GradeStatus, Method
from tests.conftest import ROOT, RUBRICS
from tests.judges import DyingJudge

BANK = RUBRICS / "grad_accum_engineer.yaml"
EXAMPLES = ROOT / "examples" / "grad_accum_engineer.submissions.jsonl"
ANSWERS = 184  # 4 students: 160 objective answers and 24 essays
KILLED = death_message([Ending("EngineCore", -9)], 0, MemoryBudget(needed_gib=6.2, free_gib=3.1))

runner = CliRunner()


def _grade(out, monkeypatch, judge) -> object:
    monkeypatch.setattr(grader.judge, "make_judge", lambda settings: judge)
    monkeypatch.setenv("GRADER_CACHE_DIR", str(out.parent / "cache"))
    args = ["grade", EXAMPLES, "--bank", BANK, "--out", out, "--judge", "scripted",
            "--embed-model", "none", "--progress", "plain"]  # fmt: skip
    return runner.invoke(app, [str(a) for a in args])


def test_a_killed_judge_fails_the_run_and_the_rerun_leaves_one_record_per_answer(
    tmp_path, monkeypatch
):
    out = tmp_path / "grades.jsonl"
    first = _grade(out, monkeypatch, DyingJudge(alive_calls=1, error=KILLED))
    assert first.exit_code == EXIT_UNSCORED == 3, first.output
    output = " ".join(first.output.split())
    assert "answers left unscored: " in output
    assert "the judge's worker was killed, likely out of memory" in output
    assert "about 6.2 GB needed, 3.1 GB free when it started" in output
    assert "judging: " in output and " answers failed" in output  # the counter says so
    grades = read_grades(out)
    unscored = [g for g in grades if g.status is GradeStatus.UNSCORED]
    assert 0 < len(unscored) < 24 and len(grades) == ANSWERS
    assert f"{len(unscored)} of {ANSWERS} answers left unscored" in output

    rerun = _grade(out, monkeypatch, ScriptedJudge())
    assert rerun.exit_code == 0, rerun.output
    assert f"{ANSWERS - len(unscored)} of {ANSWERS} already graded" in rerun.output
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == ANSWERS
    assert Counter(x["submission_id"] for x in lines).most_common(1)[0][1] == 1
    assert {x["status"] for x in lines} == {"graded"}
    # The answers graded the first time were kept, not graded again.
    first_ids = [g.submission_id for g in grades]
    assert [x["submission_id"] for x in lines] == first_ids


def test_a_run_that_leaves_answers_unscored_again_still_fails(tmp_path, monkeypatch):
    out = tmp_path / "grades.jsonl"
    assert _grade(out, monkeypatch, DyingJudge(0, KILLED)).exit_code == EXIT_UNSCORED
    again = _grade(out, monkeypatch, DyingJudge(0, "the server is gone"))
    assert again.exit_code == EXIT_UNSCORED
    unscored = sum(g.status is GradeStatus.UNSCORED for g in read_grades(out))
    output = " ".join(again.output.split())
    assert f"{unscored} of {ANSWERS} answers left unscored: " in output
    assert "the server is gone" in output and "killed" not in output  # this run's cause
    assert len(out.read_text().splitlines()) == ANSWERS


def _record(sid: str, status: GradeStatus) -> Grade:
    graded = status is GradeStatus.GRADED
    return Grade(submission_id=sid, question_id="q", status=status, score=1.0 if graded else None,
                 max_score=2.0, method=Method.JUDGE)  # fmt: skip


def test_the_last_record_of_an_answer_supersedes_the_earlier_ones(tmp_path):
    """What a rerun that was itself interrupted leaves: readers take each answer's last
    record, in the order the answers first appear, and compaction keeps only those."""
    path = tmp_path / "grades.jsonl"
    with GradeWriter(path) as writer:
        writer.write([_record("a", GradeStatus.GRADED), _record("b", GradeStatus.UNSCORED),
                      _record("c", GradeStatus.UNSCORED), _record("b", GradeStatus.GRADED)])  # fmt: skip
    latest = [(g.submission_id, g.status) for g in read_grades(path)]
    assert latest == [("a", "graded"), ("b", "graded"), ("c", "unscored")]
    assert compact_grades(path) == 1
    assert [json.loads(x)["submission_id"] for x in path.read_text().splitlines()] == list("abc")
    assert [(g.submission_id, g.status) for g in read_grades(path)] == latest
    before = path.read_bytes()
    assert compact_grades(path) == 0 and path.read_bytes() == before
    assert not list(tmp_path.glob(".*compacting"))


def test_a_counter_with_failures_ends_red_not_with_a_green_tick():
    def draw(fail: int) -> str:
        terminal = io.StringIO()
        console = Console(file=terminal, force_terminal=True, color_system="standard", width=100)
        with RichDisplay(console) as display:
            counter = display.counter("judging", 4, "answers")
            counter.advance(4)
            if fail:
                counter.fail(fail)
        return terminal.getvalue()

    failed, fine = draw(2), draw(0)
    assert "✗" in failed and "✓" not in failed and "judging (2 failed)" in failed
    assert "\x1b[31m" in failed  # red
    assert "✓" in fine and "✗" not in fine and "failed" not in fine


def test_the_plain_counter_names_its_failures():
    terminal = io.StringIO()
    display = PlainDisplay(Console(file=terminal, width=200))
    counter = display.counter("judging", 4, "answers")
    counter.advance(4)
    counter.fail(3)
    assert terminal.getvalue().splitlines()[-1] == "judging: 3 of 4 answers failed"
