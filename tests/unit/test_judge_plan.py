"""The judge's budget (``GRADER_JUDGE_PLAN``): criterion checks only where the scorer weighs
the judge's reading (English with the shipped scorer); other answers are split by coverage.
Requests are counted on the scripted judge, embeddings come from a deterministic double."""

import pytest

from grader.config import JudgeSettings, ScorerSettings, Settings, SignalSettings
from grader.engine.finish.rescored import rescored
from grader.engine.judging.evidence import locate
from grader.engine.pipeline import Pipeline
from grader.engine.scoring.scorer_model import load_scorer
from grader.models import Bank, Criterion, Grade, Question, QuestionType, Rubric, Submission
from tests.embedders import CountingEmbedder
from tests.judges import RecordingJudge

ZH = Question(id="zh", number="1", section="简答题", type=QuestionType.SHORT_ANSWER,
              stem="简述梯度累积的做法。", answer="把多个小批次的梯度累加起来，再统一更新参数。",
              points=4)  # fmt: skip
EN = Question(id="en", number="2", section="Short answer", type=QuestionType.SHORT_ANSWER,
              stem="What does gradient accumulation do?", language="en",
              answer="It sums the gradients of several small batches, then updates the weights "
              "once.", points=4)  # fmt: skip
RUBRICS = {
    "zh": Rubric(question_id="zh", points=4, criteria=[
        Criterion(id="C1", description="累加梯度", points=2, key_points=["把多个小批次的梯度累加"]),
        Criterion(id="C2", description="统一更新参数", points=2, key_points=["再统一更新参数"]),
    ]),
    "en": Rubric(question_id="en", points=4, criteria=[
        Criterion(id="C1", description="sums gradients", points=2,
                  key_points=["sums the gradients of several small batches"]),
        Criterion(id="C2", description="one update", points=2,
                  key_points=["updates the weights once"]),
    ]),
}  # fmt: skip
BANK = Bank(name="t", questions=[ZH, EN])
ZH_ANSWERS = [
    "把多个小批次的梯度累加起来，再统一更新参数。",
    "梯度累加以后更新参数。",
    "先累加梯度。",
    "更新参数，这样显存够用。",
]
EN_ANSWERS = [
    "It sums the gradients of several small batches and updates the weights once.",
    "The gradients are added up before one update.",
    "It makes training faster.",
]
BATCH = [
    *(Submission(id=f"z{i}", question_id="zh", answer=a) for i, a in enumerate(ZH_ANSWERS)),
    *(Submission(id=f"e{i}", question_id="en", answer=a) for i, a in enumerate(EN_ANSWERS)),
]


def run(plan: str, mode: str = "probability", batch=BATCH, **settings):
    judge = RecordingJudge()
    chosen = Settings(
        judge=JudgeSettings(backend="scripted", mode=mode, plan=plan),
        signals=SignalSettings(offtopic_margin=-1.0),
        **settings,
    )
    pipeline = Pipeline(BANK, RUBRICS, judge, chosen, embedder=CountingEmbedder())
    grades = {g.submission_id: g for g in pipeline.grade_many(batch)}
    asked = [r for call in judge.calls for r in call]
    return grades, asked


def asked_for(requests, prefix: str) -> list:
    return [r for r in requests if r.id.startswith(prefix)]


@pytest.mark.parametrize("mode", ["probability", "verdict"])
def test_budget_asks_no_criterion_check_of_a_chinese_answer_and_every_one_of_an_english(mode):
    _, budget = run("budget", mode)
    _, full = run("full", mode)
    assert asked_for(budget, "z") == []  # the shipped scorer weighs no judge reading in Chinese
    assert asked_for(full, "z")  # the full plan still asks
    english = sorted(r.id for r in asked_for(full, "e"))
    assert english and sorted(r.id for r in asked_for(budget, "e")) == english
    assert len(budget) == len(english)


def test_a_chinese_grade_keeps_its_score_its_criteria_and_evidence_without_the_judge():
    budget, _ = run("budget")
    full, _ = run("full")
    for i, answer in enumerate(ZH_ANSWERS):
        grade, judged = budget[f"z{i}"], full[f"z{i}"]
        # the judge does not feed the scorer on Chinese answers: the same score either way
        assert grade.status == "graded" and grade.score == judged.score
        assert sum(c.points for c in grade.criteria) == pytest.approx(grade.score)
        assert [c.id for c in grade.criteria] == ["C1", "C2"]
        for c in grade.criteria:
            assert c.points <= c.max_points and locate(c.evidence, answer) is not None
        assert grade.details.split == "coverage" and not grade.details.has("judge_points")
        assert grade.details.scorer is not None
        assert "judge_share" not in grade.details.scorer.features
        assert grade.provenance.judge_checks == 0
        assert not judged.details.has("split") and judged.details.has("judge_points")
    # the split follows coverage: the answer with only the first key point has it there
    first = {c.id: c.points for c in budget["z2"].criteria}
    assert first["C1"] >= first["C2"]


def test_english_grades_are_the_same_in_both_plans():
    budget, _ = run("budget")
    full, _ = run("full")
    for i in range(len(EN_ANSWERS)):
        a, b = budget[f"e{i}"], full[f"e{i}"]
        assert (a.score, a.criteria, a.details) == (b.score, b.criteria, b.details)


def test_without_a_scorer_or_embeddings_the_judge_decides_so_every_plan_asks():
    _, no_scorer = run("budget", scorer=ScorerSettings(choice="none"))
    assert asked_for(no_scorer, "z")
    judge = RecordingJudge()
    pipeline = Pipeline(
        BANK, RUBRICS, judge, Settings(judge=JudgeSettings(backend="scripted", plan="budget"))
    )
    (grade,) = pipeline.grade_many([BATCH[0]])
    assert judge.calls and not grade.details.has("split")


def test_written_feedback_reaches_answers_no_judge_scored():
    judge = RecordingJudge(script=lambda request: "要点齐全，表述清楚。")
    pipeline = Pipeline(
        BANK, RUBRICS, judge,
        Settings(
            judge=JudgeSettings(backend="scripted", plan="budget", feedback="judge"),
            signals=SignalSettings(offtopic_margin=-1.0),
        ),
        embedder=CountingEmbedder(),
    )  # fmt: skip
    (grade,) = pipeline.grade_many([BATCH[0]])
    assert grade.details.split == "coverage"
    assert grade.feedback == "要点齐全，表述清楚。"
    assert [len(call) for call in judge.calls] == [1]  # one sentence, no criterion check


def test_a_rescored_coverage_grade_stays_split_by_coverage():
    budget, _ = run("budget")
    again = rescored(budget["z0"], load_scorer("default"), 0.5, answer=ZH_ANSWERS[0],
                     rubric=RUBRICS["zh"])  # fmt: skip
    assert again is not None and again.details.split == "coverage"
    assert not again.details.has("judge_points") and again.score == budget["z0"].score


def test_a_coverage_grade_reads_back_as_written():
    budget, _ = run("budget")
    grade = budget["z0"]
    again = Grade.model_validate_json(grade.model_dump_json())
    assert again == grade and again.details.split == "coverage"
    assert again.provenance.judge_plan == "budget" and again.provenance.judge_checks == 0
