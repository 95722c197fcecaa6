"""Plan ``anchored`` (``engine.scoring.anchored``): on a reviewed rubric in a language the scorer weighs
no judge for, the judge reads every answer and the question's three anchors once; its reading,
set between the anchors, takes a quarter of the final share. Requests are counted on the
scripted judge, embeddings come from a deterministic double."""

import pytest

from grader.config import JudgeSettings, Settings, SignalSettings
from grader.engine.finish.rescored import rescored
from grader.engine.pipeline import Pipeline
from grader.engine.scoring.anchored import ANCHOR_ID, VAGUE
from grader.engine.scoring.points import to_points
from grader.engine.scoring.scorer_core.rules import ANCHORED_WEIGHT
from grader.engine.scoring.scorer_model import load_scorer
from grader.models import Bank, Grade, Submission
from tests.embedders import CountingEmbedder
from tests.judges import RecordingJudge
from tests.unit.test_judge_plan import BANK, BATCH, EN_ANSWERS, RUBRICS, ZH, ZH_ANSWERS


def pipeline(plan: str, rubrics=RUBRICS, judge=None) -> tuple[Pipeline, RecordingJudge]:
    judge = judge or RecordingJudge()
    settings = Settings(
        judge=JudgeSettings(backend="scripted", plan=plan),
        signals=SignalSettings(offtopic_margin=-1.0),
    )
    return Pipeline(BANK, rubrics, judge, settings, embedder=CountingEmbedder()), judge


def grade(plan: str, batch=BATCH, rubrics=RUBRICS) -> tuple[dict[str, Grade], list]:
    graded, judge = pipeline(plan, rubrics)
    grades = {g.submission_id: g for g in graded.grade_many(batch)}
    return grades, [r for call in judge.calls for r in call]


def anchor_requests(requests) -> set[str]:
    """The anchor answers asked, as ``<name>:<question>``."""
    return {r.id.split("/")[0].removeprefix(f"{ANCHOR_ID}:") for r in requests
            if r.id.startswith(ANCHOR_ID)}  # fmt: skip


def test_the_judge_reads_every_chinese_answer_and_the_three_anchors_once():
    graded, judge = pipeline("anchored")
    graded.grade_many(BATCH)
    first = [r for call in judge.calls for r in call]
    assert {r.id.split("/")[0] for r in first if r.id.startswith("z")} == {
        f"z{i}" for i in range(len(ZH_ANSWERS))
    }
    # the reference is z0's very text: the judge is asked each distinct request once
    assert anchor_requests(first) == {"stem:zh", "vague:zh"}
    anchors = {r.id.split("/")[0]: r.answer for r in first if r.id.startswith(ANCHOR_ID)}
    assert anchors[f"{ANCHOR_ID}:stem:zh"] == ZH.stem
    assert anchors[f"{ANCHOR_ID}:vague:zh"] == VAGUE["zh"]
    judge.calls.clear()
    graded.grade_many(BATCH[1:3])  # a later batch of the same question: anchors already read
    later = [r for call in judge.calls for r in call]
    assert later and anchor_requests(later) == set()
    assert ZH.answer not in {r.answer for r in later}
    judge.calls.clear()
    pipeline_alone, judge_alone = pipeline("anchored")
    pipeline_alone.grade_many(BATCH[1:2])  # without the reference's twin in the batch
    assert anchor_requests([r for call in judge_alone.calls for r in call]) == {
        "reference:zh",
        "stem:zh",
        "vague:zh",
    }


def test_the_anchored_reading_takes_its_weight_of_the_scorers_share():
    anchored, _ = grade("anchored")
    full, _ = grade("full")  # the judge read, the scorer (which ignores it in Chinese) decided
    for i in range(len(ZH_ANSWERS)):
        a, f = anchored[f"z{i}"], full[f"z{i}"]
        reading = a.details.anchored
        assert reading is not None and reading.weight == ANCHORED_WEIGHT
        assert reading.zero < reading.reference and reading.calibrated is not None
        expected = (reading.judge_share - reading.zero) / (reading.reference - reading.zero)
        assert reading.calibrated == pytest.approx(min(1.0, max(0.0, expected)), abs=1e-4)
        share = (
            1 - ANCHORED_WEIGHT
        ) * f.details.scorer.share + ANCHORED_WEIGHT * reading.calibrated
        assert a.score == to_points(share, ZH.points)
        assert a.details.scorer.share == pytest.approx(share, abs=1e-3)
    # the reference itself reads as full marks, an answer with one key point far lower
    assert anchored["z0"].details.anchored.calibrated == 1.0
    assert anchored["z2"].details.anchored.calibrated < 0.5


def test_english_answers_and_derived_rubrics_are_graded_as_in_the_budget_plan():
    derived = {**RUBRICS, "zh": RUBRICS["zh"].model_copy(update={"reviewed": False})}
    anchored, asked = grade("anchored", rubrics=derived)
    budget, _ = grade("budget", rubrics=derived)
    assert anchor_requests(asked) == set()
    assert not [r for r in asked if r.id.startswith("z")]  # no check of a derived rubric
    for i in range(len(ZH_ANSWERS)):
        assert anchored[f"z{i}"].score == budget[f"z{i}"].score
        assert not anchored[f"z{i}"].details.has("anchored")
    for i in range(len(EN_ANSWERS)):  # the scorer weighs the English reading itself
        a, b = anchored[f"e{i}"], budget[f"e{i}"]
        assert (a.score, a.criteria) == (b.score, b.criteria) and not a.details.has("anchored")


def test_one_answer_gets_one_grade_alone_or_in_its_batch():
    together, _ = grade("anchored")
    for submission in BATCH[: len(ZH_ANSWERS)]:
        (alone,) = pipeline("anchored")[0].grade_many([submission])
        assert alone.score == together[submission.id].score
        assert alone.details.anchored == together[submission.id].details.anchored


def test_anchors_that_do_not_separate_leave_the_scorer_alone():
    # a judge that reads every answer alike: the empty anchors read as high as the reference
    flat = RecordingJudge(label_script=lambda request: dict.fromkeys(request.labels, 1.0))
    graded, _ = pipeline("anchored", judge=flat)
    anchored = {g.submission_id: g for g in graded.grade_many(BATCH)}
    full, _ = grade("full")
    for i in range(len(ZH_ANSWERS)):
        reading = anchored[f"z{i}"].details.anchored
        assert reading is not None and reading.calibrated is None
        assert anchored[f"z{i}"].score == full[f"z{i}"].score


def test_a_rescored_grade_keeps_the_anchored_reading():
    anchored, _ = grade("anchored")
    for i, answer in enumerate(ZH_ANSWERS):
        before = anchored[f"z{i}"]
        again = rescored(before, load_scorer("default"), 0.5, answer=answer, rubric=RUBRICS["zh"])
        assert again is not None and again.details.anchored == before.details.anchored
        assert again.score == before.score


def test_an_anchored_grade_reads_back_as_written():
    anchored, _ = grade("anchored")
    again = Grade.model_validate_json(anchored["z1"].model_dump_json())
    assert again == anchored["z1"] and again.details.anchored is not None


@pytest.mark.parametrize("plan", ["budget", "full", "anchored"])
def test_a_question_without_a_reference_is_graded_as_judged_and_not_anchored(plan):
    # no scorer model has an answer's features without a reference: it used to stop the batch
    bare = ZH.model_copy(update={"answer": None})
    graded = Pipeline(
        Bank(name="t", questions=[bare]), {"zh": RUBRICS["zh"]}, RecordingJudge(),
        Settings(judge=JudgeSettings(backend="scripted", plan=plan),
                 signals=SignalSettings(offtopic_margin=-1.0)),
        embedder=CountingEmbedder(),
    )  # fmt: skip
    (grade,) = graded.grade_many([Submission(id="z0", question_id="zh", answer=ZH_ANSWERS[1])])
    assert grade.status == "graded" and grade.score is not None
    assert not grade.details.has("anchored") and not grade.details.has("scorer")
