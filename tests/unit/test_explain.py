"""``grader explain`` reads a real grades file back as a person reads it: the criteria with
their points and the sentence that earned them, then every step that moved the score."""

from __future__ import annotations

import re
from functools import cache

from typer.testing import CliRunner

from grader.cli import app
from grader.files.grades import GradeWriter, read_grades
from grader.models import AnswerVariant, Grade, TrailStep
from tests.conftest import ROOT
from tests.unit.test_trail import DATA, grade_all, lines

runner = CliRunner()


@cache
def graded() -> list[Grade]:
    """The example exam and the injected answers, graded with the default scorer."""
    rows = lines(ROOT / "examples" / "grad_accum_engineer.submissions.jsonl")
    cases = lines(DATA / "injections.jsonl")
    rows += [
        {"id": c["id"], "question_id": c["question_id"], "answer": c["injected"]} for c in cases
    ]
    rows += [r for r in lines(DATA / "seed_answers_3.jsonl") if r["kind"] == "wrong"]
    return grade_all(rows)


def written(tmp_path) -> tuple:
    path = tmp_path / "grades.jsonl"
    with GradeWriter(path) as writer:
        writer.write(graded())
    return path, graded()


def run(*args: str):
    return runner.invoke(app, ["explain", *map(str, args)])


def with_steps(grades: list[Grade], *steps: TrailStep) -> Grade:
    return next(g for g in grades if all(s in {e.step for e in g.trail} for s in steps))


def test_a_grade_moved_by_several_steps_is_told_step_by_step(tmp_path):
    path, grades = written(tmp_path)
    grade = with_steps(grades, TrailStep.SCORER, TrailStep.SUBSTANCE)
    result = run(path, grade.submission_id)
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith(f"{grade.submission_id} (question {grade.question_id}")
    assert f": {grade.score:g} of {grade.max_score:g}" in out.splitlines()[0]
    for c in grade.criteria:  # each criterion with its points, and its sentence when it earned
        row = next(line for line in out.splitlines() if line.strip().startswith(f"{c.id} "))
        assert f"{round(c.points, 2):g} / {c.max_points:g}" in row
        if c.points > 0 and c.evidence:
            assert c.evidence[:20] in row
        if c.rationale:  # its line of why, right under it
            below = out.splitlines()[out.splitlines().index(row) + 1]
            assert below.strip().startswith(f"↳ {' '.join(c.rationale.split())[:40]}")
    steps = re.findall(r"^  (\d+)\. (\w+) ", out, flags=re.MULTILINE)
    assert [s for _, s in steps] == [e.step for e in grade.trail]
    last = out.splitlines()[out.splitlines().index("How the score was decided:") + 1 :]
    assert any(f"→ {grade.score:g}" in line and "substance" in line for line in last)
    assert "asserts a known wrong claim" in out


def test_an_injected_answer_shows_the_bound(tmp_path):
    path, grades = written(tmp_path)
    grade = next(
        g
        for g in grades
        if g.details.injection and g.details.injection.kept == AnswerVariant.CLEANED
    )
    out = run(path, grade.submission_id).output
    assert "injection" in out and "the lower stands" in out
    assert grade.details.injection.other is not None  # the variant not kept, for a re-score


def test_objective_and_rule_grades_have_their_one_step(tmp_path):
    path, grades = written(tmp_path)
    for step in (TrailStep.OBJECTIVE, TrailStep.RULE):
        grade = next(g for g in grades if [e.step for e in g.trail] == [step])
        out = run(path, grade.submission_id).output
        assert f"  1. {step}" in out and f"→ {grade.score:g}" in out


def test_a_file_from_before_trails_still_explains_its_criteria():
    golden = ROOT / "tests" / "golden" / "grades_f7d6462.jsonl"
    grade = next(g for g in read_grades(golden) if g.criteria and g.score)
    out = run(golden, grade.submission_id)
    assert out.exit_code == 0, out.output
    assert "not recorded" in out.output and f"{grade.criteria[0].id} " in out.output


def test_a_missing_file_or_an_unknown_id_is_a_clear_error(tmp_path):
    missing = run(tmp_path / "nope.jsonl", "x")
    assert missing.exit_code == 2
    assert "nope.jsonl: no such grades file" in missing.output
    path, _ = written(tmp_path)
    unknown = run(path, "no-such-answer")
    assert unknown.exit_code == 2
    assert "no grade for submission 'no-such-answer'" in unknown.output
