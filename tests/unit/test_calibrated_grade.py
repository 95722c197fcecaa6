"""The calibrated scorer inside grade_many: what decides the score, what the grade records,
and how graded answers, copies and disagreements with the judge are handled (embeddings from a
deterministic double, the scripted judge)."""

import pytest

from grader.config import JudgeSettings, ScorerSettings, Settings, SignalSettings
from grader.engine.judging.evidence import locate
from grader.engine.pipeline import Pipeline
from grader.engine.review.queue import explanations
from grader.engine.scoring.points import _spread
from grader.engine.scoring.scorer_model import load_scorer
from grader.models import (
    Anchor,
    Bank,
    Criterion,
    GradedAnswer,
    Question,
    QuestionType,
    Rubric,
    Submission,
)
from tests.embedders import CountingEmbedder
from tests.judges import RecordingJudge

Q = Question(id="q1", number="1", section="简答题", type=QuestionType.SHORT_ANSWER,
             stem="简述梯度累积的做法。", answer="把多个小批次的梯度累加起来，再统一更新参数。", points=4)  # fmt: skip
RUBRIC = Rubric(
    question_id="q1",
    points=4,
    criteria=[
        Criterion(id="C1", description="累加梯度", points=2, key_points=["把多个小批次的梯度累加"]),
        Criterion(id="C2", description="统一更新参数", points=2, key_points=["再统一更新参数"]),
    ],
)
BANK = Bank(name="t", questions=[Q])
ANSWERS = [
    "把多个小批次的梯度累加起来，再统一更新参数。",
    "梯度累加以后更新参数。",
    "先累加梯度。",
    "更新参数。",
    "今天天气很好，我们去公园。",
]


def yes(p):
    return lambda request: {"否": 1 - p, "是": p}


def pipeline(label_script=None, rubric=RUBRIC, judge_plan="budget", **parts):
    return Pipeline(
        BANK,
        {"q1": rubric},
        RecordingJudge(label_script=label_script),
        Settings(
            judge=JudgeSettings(backend="scripted", plan=judge_plan),
            signals=SignalSettings(offtopic_margin=-1.0),
            **parts,
        ),
        embedder=CountingEmbedder(),
    )


def sub(answer, i):
    return Submission(id=i, question_id="q1", answer=answer, student=f"stu-{i}")


def test_the_scorer_decides_and_the_grade_says_how():
    # the full judge plan: the judge reads the Chinese answer too (``judging.budget``)
    (grade,) = pipeline(yes(0.8), judge_plan="full").grade_many([sub(ANSWERS[0], "a")])
    scorer = load_scorer("default")
    assert grade.status == "graded" and grade.score is not None
    assert grade.score * 2 == int(grade.score * 2)  # half points
    assert sum(c.points for c in grade.criteria) == pytest.approx(grade.score)
    for c in grade.criteria:
        assert c.points <= c.max_points
        if c.points:
            assert locate(c.evidence, ANSWERS[0]) is not None
    explained = grade.details.scorer
    assert explained.version == scorer.version == grade.provenance.scorer_version
    assert explained.decided_by in {s.name for s in scorer.first_stage}
    assert {"semantic_coverage", "ngram_coverage", "judge_share"} <= explained.features.keys()
    # the pushes and the intercept add up to the share (before clipping)
    decided = next(s for s in scorer.first_stage if s.name == explained.decided_by)
    total = decided.intercept + sum(explained.contributions.values())
    assert min(max(total, 0), 1) == pytest.approx(explained.share, abs=1e-3)
    assert grade.details.judge_points == {"C1": 1.6, "C2": 1.6}  # the judge's own, kept


def test_without_a_scorer_the_judge_decides():
    (grade,) = pipeline(yes(0.8), scorer=ScorerSettings(choice="none")).grade_many(
        [sub(ANSWERS[0], "a")]
    )
    assert grade.score == pytest.approx(3.2) and not grade.details.has("scorer")


def test_a_copy_of_a_graded_answer_takes_its_grade():
    graded = [GradedAnswer(id="h1", question_id="q1", answer=ANSWERS[2], score=1.5)]
    (grade,) = pipeline(yes(0.9)).grade_many([sub(ANSWERS[2], "a")], graded=graded)
    assert grade.score == 1.5 and grade.details.scorer.decided_by == "copy"
    assert [c.model_dump() for c in grade.details.scorer.copies] == [{"id": "h1", "score": 1.5}]


def test_graded_neighbours_move_the_score_and_are_named():
    graded = [
        GradedAnswer(id=f"h{i}", question_id="q1", answer=f"{text}（第{i}份）", score=score)
        for i, (text, score) in enumerate(
            [(ANSWERS[0], 4), (ANSWERS[1], 3), (ANSWERS[2], 2), (ANSWERS[3], 2), (ANSWERS[4], 0),
             (ANSWERS[0], 4)]
        )
    ]  # fmt: skip
    (grade,) = pipeline(yes(0.6)).grade_many([sub(ANSWERS[1], "a")], graded=graded)
    explained = grade.details.scorer
    assert explained.decided_by.startswith("graded")
    assert explained.features["graded_count"] == 6
    assert explained.neighbours[0].id == "h1"  # nearest first
    # the answer itself is never its own neighbour
    self_graded = [*graded, GradedAnswer(id="a", question_id="q1", answer=ANSWERS[1], score=3)]
    (again,) = pipeline(yes(0.6)).grade_many([sub(ANSWERS[1], "a")], graded=self_graded)
    assert "a" not in {n.id for n in again.details.scorer.neighbours}
    assert again.details.scorer.decided_by != "copy"


def test_anchors_with_full_scores_are_graded_answers():
    anchored = RUBRIC.model_copy(
        update={"anchors": [Anchor(id="x", answer=ANSWERS[3], scores={"C1": 0, "C2": 1}),
                            Anchor(id="partial", answer=ANSWERS[2], scores={"C1": 1})]}
    )  # fmt: skip
    (grade,) = pipeline(yes(0.5), rubric=anchored).grade_many([sub(ANSWERS[3], "a")])
    assert [c.model_dump() for c in grade.details.scorer.copies] == [
        {"id": "anchor:x", "score": 1.0}
    ]
    assert grade.score == 1.0


def test_an_anchor_promoted_from_a_graded_answer_counts_once_with_the_newest_score():
    # answer 7 was promoted at 1 point, then rescored 2: one copy, the instructor's newest score
    promoted = Anchor(id="answer-7", answer=ANSWERS[3], scores={"C1": 0, "C2": 1}, answer_id=7)
    anchored = RUBRIC.model_copy(update={"anchors": [promoted]})
    graded = [GradedAnswer(id="7", question_id="q1", answer=ANSWERS[3], score=2)]
    (grade,) = pipeline(yes(0.5), rubric=anchored).grade_many([sub(ANSWERS[3], "a")], graded=graded)
    assert [c.model_dump() for c in grade.details.scorer.copies] == [{"id": "7", "score": 2.0}]
    # in another database (the rubric copied there) answer 7 is another answer: the anchor stays
    other = [GradedAnswer(id="7", question_id="q1", answer=ANSWERS[1], score=3)]
    (grade,) = pipeline(yes(0.5), rubric=anchored).grade_many([sub(ANSWERS[3], "a")], graded=other)
    assert [c.model_dump() for c in grade.details.scorer.copies] == [
        {"id": "anchor:answer-7", "score": 1.0}
    ]


def test_a_judge_far_from_the_scorer_sends_the_grade_to_review():
    # a judge that says "yes" to everything: right on the full answer, far off on the weather
    judged = pipeline(yes(0.99), judge_plan="full")  # the judge reads Chinese answers too
    full, weather = judged.grade_many([sub(ANSWERS[0], "a"), sub(ANSWERS[4], "b")])
    assert "scorer_disagreement" not in {r.code for r in explanations(full)}
    assert weather.details.scorer.share < 0.5 < weather.details.scorer.features["judge_share"]
    # the disagreement explains the grade's place in the review ranking (engine.review.queue)
    assert "scorer_disagreement" in {r.code for r in explanations(weather)}
    assert weather.score < full.score


def test_spread_fills_in_proportion_and_respects_caps():
    assert _spread(3, [1, 1], [2, 2]) == pytest.approx([1.5, 1.5])
    assert _spread(3, [3, 1], [2, 2]) == pytest.approx([2, 1])  # the first is capped at 2
    assert _spread(4, [0, 0], [2, 2]) == pytest.approx([2, 2])
    assert _spread(1, [1, 0], [0, 2]) == pytest.approx([0, 1])  # nothing into a 0-point criterion
