"""One answer, one grade: the same answer to the same question, with the same graded
answers, gets the same score and is shown the same anchors whether it is graded alone, in a
batch of 32 or among all its classmates.

The embedder double's vectors are character histograms, so answers that share their wording
are close; the scripted judge scores by key-point coverage (``grader.judge.scripted``).
"""

from __future__ import annotations

import pytest

from grader.config import JudgeSettings, Settings, SignalSettings
from grader.engine.pipeline import Pipeline
from grader.engine.scoring.features import answer_features
from grader.engine.scoring.scorer_model import JUDGE_FEATURES, load_scorer
from grader.engine.signals.analysis import analyze_question
from grader.models import (
    Anchor,
    Bank,
    Criterion,
    GradedAnswer,
    Method,
    Question,
    QuestionType,
    ReviewCode,
    Rubric,
    Submission,
)
from tests.embedders import CountingEmbedder
from tests.judges import RecordingJudge

QUESTION = Question(
    id="q1",
    number="1",
    section="简答题",
    type=QuestionType.SHORT_ANSWER,
    stem="什么是梯度累积？",
    answer="多个小批次的梯度累加后再更新一次参数。",
    points=4,
)
CRITERIA = [
    Criterion(id="C1", description="累加梯度", points=2, key_points=["累加多个小批次的梯度"]),
    Criterion(id="C2", description="再更新参数", points=2, key_points=["累加后再更新参数"]),
]
# More anchors than the judge is shown (anchors_k = 3): each reads like a different answer.
ANCHORS = [
    Anchor(id="a1", answer="梯度累加，再更新参数", scores={"C1": 2, "C2": 2}),
    Anchor(id="a2", answer="显存不够时用的技巧", scores={"C1": 0, "C2": 0}),
    Anchor(id="a3", answer="学习率要随批次调整", scores={"C1": 0, "C2": 0}),
    Anchor(id="a4", answer="多个小批次梯度累加", scores={"C1": 2, "C2": 0}),
    Anchor(id="a5", answer="每一步都更新参数", scores={"C1": 0, "C2": 1}),
]
RUBRIC = Rubric(question_id="q1", points=4, criteria=CRITERIA, anchors=ANCHORS)
BANK = Bank(name="t", questions=[QUESTION])
STEMS = ("累加", "多个小批次的梯度", "再更新参数", "显存不够", "学习率", "每一步", "等效大批次")
ANSWERS = [
    f"{STEMS[i % 7]}，{STEMS[(i * 3 + 1) % 7]}{'，' + STEMS[(i * 5 + 2) % 7] if i % 2 else ''}"
    f"（第{i}种说法）"
    for i in range(48)
]
CLASS = [
    Submission(id=f"s{i:02d}", question_id="q1", answer=a, student=f"stu{i}")
    for i, a in enumerate(ANSWERS)
]


def grade_in(
    batch: list[Submission],
    cohort: list[Submission] | None = None,
    graded: list[GradedAnswer] | None = None,
) -> dict:
    """``grade_many`` on one batch, its answers the whole cohort unless one is given (a
    submissions file of just these answers; a service batch with the exam's stored ones)."""
    pipeline = Pipeline(
        BANK,
        {"q1": RUBRIC},
        RecordingJudge(),
        Settings(judge=JudgeSettings(backend="scripted", mode="verdict", plan="full")),
        embedder=CountingEmbedder(),
    )
    grades = pipeline.grade_many(batch, cohort if cohort is not None else batch, graded or [])
    return {g.submission_id: g for g in grades}


@pytest.mark.parametrize("who", [0, 7, 16])
def test_the_judge_is_shown_the_same_anchors_alone_in_a_batch_and_among_all(who):
    me = CLASS[who]
    batch = [me, *[s for s in CLASS if s is not me][:31]]
    anchors = {
        name: grade_in(given)[me.id].provenance.anchors
        for name, given in (("alone", [me]), ("batch of 32", batch), ("among all", CLASS))
    }
    assert len(anchors["alone"]) == 3
    assert anchors["batch of 32"] == anchors["alone"] and anchors["among all"] == anchors["alone"]


def test_a_file_graded_in_batches_of_1_32_or_all_gives_each_answer_one_score():
    """``grader grade --batch-size``: the whole file is every batch's cohort, so the
    classmates' signals (off-topic rule, cohort z-score) read the same answers whatever the
    batch; so does the service, whose cohort is the exam's stored answers."""
    everyone = {sid: g.score for sid, g in grade_in(CLASS).items()}
    in_32 = {}
    for start in range(0, len(CLASS), 32):
        found = grade_in(CLASS[start : start + 32], CLASS)
        in_32.update({sid: g.score for sid, g in found.items()})
    alone = {s.id: grade_in([s], CLASS)[s.id].score for s in CLASS[::7]}
    assert in_32 == everyone
    assert alone == {sid: everyone[sid] for sid in alone}


def test_an_answer_graded_alone_in_a_batch_of_32_or_among_all_gets_one_score():
    """A file (or a service post) holding only some of the class: no other answers to compare
    with must not change a score. The off-topic rule's rescue by the classmates' answers gave
    s05 0 alone and 2.5 among all (``one_grade``,
    docs/research/explorations.md: what replaced it)."""
    everyone = {sid: g.score for sid, g in grade_in(CLASS).items()}
    for me in CLASS[::5]:
        batch = [me, *[s for s in CLASS if s is not me][:31]]
        assert grade_in([me])[me.id].score == everyone[me.id]
        assert grade_in(batch)[me.id].score == everyone[me.id]


@pytest.mark.parametrize("who", [0, 5, 16])
def test_the_scorer_reads_the_same_inputs_alone_in_a_batch_and_among_all(who):
    """Every feature the shipped scorer names, from the answer's signals: the cohort z-score
    (``cohort_reference_z``) read the run and is gone from the scorer and the signals."""
    me = CLASS[who]
    batch = [me, *[s for s in CLASS if s is not me][:31]]
    scorer = load_scorer("default")
    names = sorted({n for s in scorer.first_stage for n in s.features} - set(JUDGE_FEATURES))
    seen = {}
    for name, given in (("alone", [me]), ("batch of 32", batch), ("among all", CLASS)):
        analysis = analyze_question(
            QUESTION, RUBRIC, [me], CountingEmbedder(), SignalSettings(), cohort=given
        )
        features = answer_features(QUESTION, RUBRIC, me.answer, analysis.signals[me.id])
        seen[name] = {n: getattr(features, n) for n in names}
        assert analysis.signals[me.id].reference_z is None
    assert "reference_margin" in names and "cohort_reference_z" not in names
    assert seen["batch of 32"] == seen["alone"] and seen["among all"] == seen["alone"]


# Far below the zero margin (nothing like the reference), and a graded answer in nearly its words.
OFF = Submission(id="off", question_id="q1", answer="今晚我们去吃火锅，然后看一场足球比赛。")
NEAR = "今晚我们去吃火锅，再看一场足球比赛。"


def test_a_close_graded_answer_that_scored_grades_an_answer_below_the_zero_margin():
    """The graded-neighbour rescue (``rule_grades.nearest_scored``): 0 unread without graded
    answers, or when the close graded answer scored 0; graded, still to review, otherwise."""
    alone = grade_in([OFF])["off"]
    assert alone.method == Method.RULE and alone.score == 0.0
    zero = [GradedAnswer(id="g", question_id="q1", answer=NEAR, score=0)]
    assert grade_in([OFF], graded=zero)["off"].method == Method.RULE
    scored = [GradedAnswer(id="g", question_id="q1", answer=NEAR, score=3)]
    rescued = grade_in([OFF], graded=scored)["off"]
    assert rescued.method != Method.RULE and rescued.score is not None
    assert rescued.needs_review
    assert ReviewCode.OFF_TOPIC in [r.code for r in rescued.review_reasons]


def test_a_rescued_answer_gets_one_score_alone_in_a_batch_and_among_all():
    """The rescue reads the answer and the graded answers only: the same graded answers give
    the same score whoever shares the run."""
    graded = [
        GradedAnswer(id="g", question_id="q1", answer=NEAR, score=3),
        GradedAnswer(id="h", question_id="q1", answer=ANSWERS[3], score=4),
    ]
    everyone = [OFF, *CLASS]
    scores = {
        name: grade_in(given, graded=graded)["off"].score
        for name, given in (("alone", [OFF]), ("batch of 32", everyone[:32]), ("all", everyone))
    }
    assert scores["alone"] is not None and scores["alone"] > 0
    assert scores["batch of 32"] == scores["alone"] and scores["all"] == scores["alone"]
