"""The judge loads on its first request (``LazyJudge``): ``grader grade`` on a Chinese exam
under the judge's budget asks it nothing and never waits for its load (40–70 s on the
embedded model); an English exam loads it once, and the display says so when it happens.
The scripted judge stands in for the model, built by a counting factory."""

from __future__ import annotations

import io
import json
import threading

import pytest
from rich.console import Console
from typer.testing import CliRunner

import grader.embed
import grader.judge
from grader.bank.files import load_bank, save_bank
from grader.cli import app
from grader.cli.display import RichDisplay
from grader.errors import ConfigError
from grader.files.grades import read_grades
from grader.judge import LazyJudge
from grader.judge.base import LabelRequest
from grader.judge.scripted import ScriptedJudge
from grader.models import Bank, GradeStatus, Question, QuestionType
from tests.conftest import ROOT, RUBRICS
from tests.embedders import CountingEmbedder

LOADING = "starting the scripted judge"  # the step the display shows while the judge builds


class Builds:
    """A judge factory that counts the judges it built and how many were closed."""

    def __init__(self, fail: Exception | None = None, hold: threading.Event | None = None):
        self.built, self.closed, self.fail, self.hold = 0, 0, fail, hold

    def __call__(self, *_settings) -> ScriptedJudge:
        self.built += 1
        if self.hold is not None:
            self.hold.wait(1.0)  # a slow load: other first requests arrive meanwhile
        if self.fail is not None:
            raise self.fail
        judge = ScriptedJudge(model="counted")
        judge.close = lambda: setattr(self, "closed", self.closed + 1)  # type: ignore[method-assign]
        return judge


def label_request(i: int) -> LabelRequest:
    return LabelRequest(id=f"s{i}/1", group="q", messages=[], labels=("no", "yes"), answer="x")


def test_nothing_is_built_until_a_request_needs_the_judge():
    builds = Builds()
    judge = LazyJudge(builds)
    assert judge.complete([]) == [] and judge.score_labels([]) == []
    judge.close()
    assert builds.built == 0 and builds.closed == 0 and not judge.built
    assert len(judge.score_labels([label_request(1)])) == 1
    judge.score_labels([label_request(2)])
    assert builds.built == 1 and judge.built
    assert (judge.backend, judge.model) == ("scripted", "counted")
    judge.close()
    assert builds.closed == 1


def test_concurrent_first_requests_build_the_judge_once():
    builds = Builds(hold=threading.Event())
    judge = LazyJudge(builds)
    start = threading.Barrier(8)
    results: list[int] = []

    def first_request(i: int) -> None:
        start.wait()
        results.append(len(judge.score_labels([label_request(i)])))

    threads = [threading.Thread(target=first_request, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds.built == 1 and results == [1] * 8


def test_a_judge_that_failed_to_load_is_not_loaded_again():
    builds = Builds(fail=RuntimeError("no such model"))
    judge = LazyJudge(builds)
    for _ in range(3):
        with pytest.raises(RuntimeError, match="no such model"):
            judge.score_labels([label_request(1)])
    assert builds.built == 1


# ``grader grade`` under the budget plan, the embeddings from the deterministic double (a name
# that is no packaged model: nothing to prepare).
runner = CliRunner()


def grade(tmp_path, monkeypatch, bank, submissions, builds=None, embed="counting"):
    builds = builds or Builds()
    monkeypatch.setattr(grader.judge, "make_judge", builds)
    monkeypatch.setattr(grader.embed, "make_embedder", lambda s, progress=None: CountingEmbedder())
    monkeypatch.setenv("GRADER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GRADER_JUDGE_PLAN", "budget")
    monkeypatch.delenv("GRADER_FEEDBACK", raising=False)
    args = ["grade", submissions, "--bank", bank, "--out", tmp_path / "grades.jsonl",
            "--judge", "scripted", "--embed-model", embed, "--progress", "plain"]  # fmt: skip
    return runner.invoke(app, [str(a) for a in args]), builds


def test_a_chinese_exam_under_the_budget_never_builds_the_judge(tmp_path, monkeypatch):
    exam = RUBRICS / "grad_accum_engineer.yaml"
    answers = ROOT / "examples" / "grad_accum_engineer.submissions.jsonl"
    result, builds = grade(tmp_path, monkeypatch, exam, answers)
    assert result.exit_code == 0, result.output
    assert builds.built == 0 and LOADING not in result.output
    grades = read_grades(tmp_path / "grades.jsonl")
    essays = [g for g in grades if g.details.split == "coverage"]  # scored, no judge asked
    assert essays and all(g.status is GradeStatus.GRADED for g in grades)


def test_an_english_exam_builds_the_judge_once_when_it_is_first_asked(tmp_path, monkeypatch):
    question = Question(
        id="en-1", number="1", section="Short answer", type=QuestionType.SHORT_ANSWER,
        stem="What does gradient accumulation do?", language="en", points=4,
        answer="It sums the gradients of several small batches, then updates the weights once.",
    )  # fmt: skip
    bank = tmp_path / "english.yaml"
    save_bank(Bank(name="english", questions=[question]), bank)
    answers = [
        "It sums the gradients of several small batches and updates the weights once.",
        "The gradients are added up over a few batches before one update of the weights.",
        "It makes training faster because the gradients of small batches are summed.",
    ]
    submissions = tmp_path / "answers.jsonl"
    submissions.write_text(
        "".join(
            json.dumps({"id": f"s{i}", "question_id": "en-1", "answer": a}) + "\n"
            for i, a in enumerate(answers)
        )
    )
    result, builds = grade(tmp_path, monkeypatch, bank, submissions)
    assert result.exit_code == 0, result.output
    assert builds.built == 1 and builds.closed == 1
    assert result.output.count(f"{LOADING}…") == 1
    # the judge loads inside the first judge call, after the answers' signals
    assert result.output.index("embedding signals") < result.output.index(LOADING)
    grades = read_grades(tmp_path / "grades.jsonl")
    judged = [g for g in grades if g.method == "judge"]  # the others off topic, by rule
    assert len(grades) == 3 and judged
    assert all(g.details.judge_mode == "probability" and g.details.checks for g in judged)


def test_a_judge_that_cannot_load_ends_the_run_when_first_asked(tmp_path, monkeypatch):
    """Exit 2 with the cause, as when the judge loaded up front; the objective answers, graded
    before, are kept (without embeddings every plan asks the judge)."""
    exam = RUBRICS / "grad_accum_engineer.yaml"
    answers = ROOT / "examples" / "grad_accum_engineer.submissions.jsonl"
    builds = Builds(fail=ConfigError("GRADER_JUDGE_MODEL='x' is neither a packaged model"))
    result, _ = grade(tmp_path, monkeypatch, exam, answers, builds, embed="none")
    assert result.exit_code == 2, result.output
    assert builds.built == 1
    output = " ".join(result.output.split())
    assert f"{LOADING}: failed" in output and "is neither a packaged model" in output
    grades = read_grades(tmp_path / "grades.jsonl")
    objective = {q.id for q in load_bank(exam).questions if q.type.objective}
    assert len(grades) == 160 and {g.question_id for g in grades} == objective


def test_a_counter_restarted_after_the_load_keeps_its_count_and_failures():
    """The judging counter's clock starts again once the judge has loaded (its estimate is
    the judging's own rate), the answers counted and failed so far kept."""
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    with RichDisplay(console) as display:
        counter = display.counter("judging", 10, "answers")
        counter.advance(3)
        counter.fail(1)
        counter.restart()
        (task,) = display.progress.tasks
        assert task.completed == 3 and task.fields["failed"] == 1 and task.total == 10
        counter.advance(2)
        assert task.completed == 5
