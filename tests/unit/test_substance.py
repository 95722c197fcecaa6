"""Answers that only restate the question earn no key point, and known wrong claims take their
points: the rules alone, in the whole grade, and again after a re-score."""

import json
from functools import cache
from pathlib import Path

import pytest

from grader.bank.files import load_bank
from grader.config import JudgeSettings, Settings
from grader.engine.finish import substance
from grader.engine.finish.rescored import rescored
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.engine.review.queue import is_hard
from grader.engine.scoring.scorer_model import load_scorer
from grader.models import (
    ClaimsCheck,
    Criterion,
    CriterionScore,
    Grade,
    GradeStatus,
    Method,
    PartReading,
    Question,
    QuestionType,
    ReviewCode,
    Rubric,
    Submission,
    WrongClaim,
)
from tests.conftest import RUBRICS
from tests.embedders import CountingEmbedder
from tests.judges import RecordingJudge

DATA = Path(__file__).resolve().parents[1] / "data"
BANKS = {"000": "ai_trainer_l2", "001": "llm_trainer_solutions", "004": "grad_accum_engineer"}


def lines(name):
    return [json.loads(x) for x in (DATA / name).read_text(encoding="utf-8").splitlines() if x]


@cache
def bank_of(question_id):
    path = RUBRICS / f"{BANKS[question_id.split('-')[0]]}.yaml"
    bank = load_bank(path)
    return bank, load_rubrics(path, bank)


def seed(question_id):
    bank, rubrics = bank_of(question_id)
    return bank.get(question_id), rubrics[question_id]


RESTATED = {  # the seed sets' answers that only restate their question (all worth 0)
    "set2-022", "set2-055", "set2-096", "set2-103",
}  # fmt: skip


@pytest.mark.parametrize(
    "case",
    [c for name in ("seed_answers.jsonl", "seed_answers_2.jsonl") for c in lines(name)],
    ids=lambda c: c["id"],
)
def test_the_restatement_rule_on_the_seed_answers(case):
    question, rubric = seed(case["question_id"])
    found = substance.assess(case["answer"], question, rubric)
    if case["id"] in RESTATED:
        assert found.restated and case["human_total"] == 0
    elif case["human_total"] > 0:
        assert not found.restated, found  # no answer with any credit is capped


@pytest.mark.parametrize(
    "answer",
    [
        "梯度累积步数的选择要具体情况具体分析。",
        "梯度累積步數的選擇會對模型訓練產生影響，要根據實際情況選擇合適的步數。",
    ],
)
def test_saying_nothing_checkable_is_a_restatement(answer):
    question, rubric = seed("004-s5-q4")
    assert substance.assess(answer, question, rubric).restated


@pytest.mark.parametrize(
    "answer",
    [
        "累积步数决定有效批次大小，步数越大梯度越稳定、更新次数越少，需要配合调整学习率和warmup。",
        "步数N越大，有效batch=micro×N越大。",  # short, concrete
    ],
)
def test_an_answer_with_content_is_not(answer):
    question, rubric = seed("004-s5-q4")
    assert not substance.assess(answer, question, rubric).restated


def test_english_answers_are_not_checked():
    question = Question(id="q", number="1", section="s", type=QuestionType.SHORT_ANSWER,
                        stem="What is the scope of global variables?", answer="File scope.",
                        language="en")  # fmt: skip
    rubric = Rubric(
        question_id="q", points=5, criteria=[Criterion(id="C1", description="x", points=5)]
    )
    assert not substance.assess("Global variables have a file scope", question, rubric).restated


CLAIMS = Rubric(
    question_id="004-s5-q4",
    points=5,
    criteria=[
        Criterion(id="C1", description="有效批次", points=2),
        Criterion(
            id="C2",
            description="显存",
            points=3,
            wrong_claims=[
                WrongClaim(claim="累积步数越大显存占用越大", points=2),
                WrongClaim(claim="梯度累积能减少计算量"),
            ],
        ),
    ],
)


@pytest.mark.parametrize(
    ("answer", "taken"),
    [
        ("累积步数越大，显存占用越大，所以步数要小。", 2.0),
        ("梯度累积能减少计算量，步数越大显存占用越大。", 3.0),  # both, at most the criterion's 3
        ("有人认为累积步数越大显存占用越大，这是错误的：显存只取决于micro-batch。", 0.0),
        ("梯度累积并不能减少计算量，显存占用不随步数增加。", 0.0),
        ("累积步数决定有效批次，计算量不变。", 0.0),  # not the claim at all
    ],
)
def test_wrong_claims_take_their_points_unless_negated(answer, taken):
    question, _ = seed("004-s5-q4")
    found = substance.assess(answer, question, CLAIMS)
    assert sum(c.points for c in found.claims) == taken
    assert all(c.sentence for c in found.claims)  # the evidence is the answer's own sentence


def _grade(score, rubric=CLAIMS, **details):
    return Grade(
        submission_id="s1", question_id=rubric.question_id, status=GradeStatus.GRADED,
        score=score, max_score=rubric.points, method=Method.JUDGE,
        criteria=[], details=details,
    )  # fmt: skip


def test_the_cap_and_the_deduction_on_a_grade_and_applying_twice_changes_nothing():
    question, _ = seed("004-s5-q4")
    restated = substance.assess("梯度累积步数的选择要具体情况具体分析。", question, CLAIMS)
    capped = substance.bound(_grade(4.0), restated, "", CLAIMS)
    assert capped.score == 0.5  # 10 % of 5 points, in half points
    assert [r.code for r in capped.review_reasons] == [ReviewCode.RESTATED_QUESTION]
    assert capped.needs_review and "复述了题目" in capped.feedback
    assert capped.details.substance.restated is True
    assert substance.bound(capped, restated, "", CLAIMS) == capped

    claimed = substance.assess("累积步数越大，显存占用越大。有效批次变大。", question, CLAIMS)
    taken = substance.bound(_grade(1.5), claimed, "", CLAIMS)
    assert taken.score == 0.0  # never below 0
    assert [r.code for r in taken.review_reasons] == [ReviewCode.WRONG_CLAIM]
    # a re-score keeps the feedback but not the reasons: the claim's line is written once
    rescored_grade = taken.model_copy(update={"score": 1.5, "review_reasons": []})
    again = substance.bound(rescored_grade, claimed, "", CLAIMS)
    assert again.feedback == taken.feedback and again.feedback.count("错误说法") == 1


def test_a_generous_grade_beside_a_wrong_claim_on_little_verified_goes_to_a_person():
    question, _ = seed("004-s5-q4")
    claimed = substance.assess("累积步数越大，显存占用越大。有效批次变大。", question, CLAIMS)

    def read(c2: float) -> ClaimsCheck:
        """C1's part asserted, and C2's for ``c2`` points where ``c2``: what the rules verify."""
        parts = [
            PartReading(criterion=c, claim=claim, status="asserted", evidence="x", pays=pays)
            for c, claim, pays in [("C1", "有效批次", 2.0), ("C2", "噪声", c2)]
            if pays
        ]
        verified = {"C1": 2.0, "C2": c2}
        return ClaimsCheck(parts=parts, verified=verified, unverified_share=0.3)

    # 4.5 − 2 keeps 2.5 of 5 points on 2 verified (under half): hard, whatever the ranking
    thin = substance.bound(_grade(4.5, claims=read(0.0)), claimed, "", CLAIMS)
    assert thin.score == 2.5
    assert [r.code for r in thin.review_reasons] == [
        ReviewCode.WRONG_CLAIM,
        ReviewCode.THINLY_VERIFIED,
    ]
    assert is_hard(thin) and "asserts a listed wrong claim" in thin.review_reasons[1].message
    assert substance.bound(thin, claimed, "", CLAIMS).review_reasons == thin.review_reasons
    # half the points verified, or a grade that keeps 30 % or less: the ranking decides
    fuller = substance.bound(_grade(4.5, claims=read(0.5)), claimed, "", CLAIMS)
    assert [r.code for r in fuller.review_reasons] == [ReviewCode.WRONG_CLAIM]
    low = substance.bound(_grade(3.5, claims=read(0.0)), claimed, "", CLAIMS)
    assert low.score == 1.5 and [r.code for r in low.review_reasons] == [ReviewCode.WRONG_CLAIM]


def test_a_generous_grade_beside_two_wrong_claims_goes_to_a_person_however_verified():
    question, _ = seed("004-s5-q4")
    one = substance.assess("累积步数越大，显存占用越大。有效批次变大。", question, CLAIMS)
    two = substance.assess("梯度累积能减少计算量，步数越大显存占用越大。", question, CLAIMS)
    parts = [PartReading(criterion="C1", claim="有效批次", status="asserted", evidence="x", pays=2)]
    parts.append(PartReading(criterion="C2", claim="显存", status="asserted", evidence="x", pays=3))
    verified = ClaimsCheck(parts=parts, verified={"C1": 2.0, "C2": 3.0}, unverified_share=0.5)
    # all 5 points verified: one wrong claim is a slip the ranking weighs, two are a person's
    slip = substance.bound(_grade(5.0, claims=verified), one, "", CLAIMS)
    assert slip.score == 3.0 and [r.code for r in slip.review_reasons] == [ReviewCode.WRONG_CLAIM]
    confused = substance.bound(_grade(5.0, claims=verified), two, "", CLAIMS)
    assert confused.score == 2.0 and is_hard(confused)
    assert "asserts 2 listed wrong claims" in confused.review_reasons[-1].message
    # kept 30 % or less: nothing generous to look at
    low = substance.bound(_grade(4.5, claims=verified), two, "", CLAIMS)
    assert low.score == 1.5 and not is_hard(low)


SLIP = Rubric(
    question_id="004-s5-q4",
    points=5,
    criteria=[
        Criterion(id="C1", description="有效批次", points=2),
        Criterion(
            id="C2", description="计算量", points=1,
            wrong_claims=[WrongClaim(claim="梯度累积能减少计算量")],
        ),
        Criterion(id="C3", description="更新次数", points=2),
    ],
)  # fmt: skip


def _slipped(verified: dict[str, float], denied: bool = False) -> Grade:
    """4.5 of 5: C1 2, C2 0.5 (the claim's criterion, its part set aside), C3 2."""
    parts = [
        PartReading(criterion=c, claim=c, status="asserted", evidence="x", pays=p)
        for c, p in verified.items()
    ]
    if denied:
        parts.append(
            PartReading(criterion="C2", claim="C2", status="negated", evidence="x", pays=1.0,
                        denied=True)
        )  # fmt: skip
    check = ClaimsCheck(parts=parts, verified=verified, unverified_share=0.5)
    grade = _grade(4.5, SLIP, claims=check)
    criteria = [
        CriterionScore(id=c, points=p, max_points=m)
        for c, p, m in [("C1", 2.0, 2.0), ("C2", 0.5, 1.0), ("C3", 2.0, 2.0)]
    ]
    return grade.model_copy(update={"criteria": criteria})


def test_a_right_answer_with_one_slip_loses_the_claims_criterion_not_its_verified_points():
    """The rubric takes a wrong claim's points from its criterion; the whole grade pays where
    the true things beside the claim may be all the answer has (under 70 % verified, or a
    decisive part denied)."""
    question, _ = seed("004-s5-q4")
    claimed = substance.assess("梯度累积能减少计算量。有效批次变大。", question, SLIP)
    assert [c.claim for c in claimed.claims] == ["梯度累积能减少计算量"]
    slip = substance.bound(_slipped({"C1": 2.0, "C3": 2.0}), claimed, "", SLIP)
    assert slip.score == 4.0  # C2's 0.5 taken: C1's 2 and C3's 2 verified, and they stand
    assert {c.id: c.points for c in slip.criteria} == {"C1": 2.0, "C2": 0.0, "C3": 2.0}
    assert substance.bound(slip, claimed, "", SLIP).score == slip.score
    thin = substance.bound(_slipped({"C1": 2.0, "C3": 1.0}), claimed, "", SLIP)
    assert thin.score == 3.5  # 3 of 5 verified: the claim's point comes off the grade
    denied = substance.bound(_slipped({"C1": 2.0, "C3": 2.0}, denied=True), claimed, "", SLIP)
    assert denied.score == 3.5  # a part denied: no right answer with one slip


def test_wrong_claims_stay_out_of_older_rubric_files_and_versions():
    plain = Criterion(id="C1", description="x", points=1)
    assert "wrong_claims" not in plain.model_dump()
    with_claim = plain.model_copy(update={"wrong_claims": [WrongClaim(claim="学习率越大收敛越快")]})
    assert with_claim.model_dump()["wrong_claims"] == [
        {"claim": "学习率越大收敛越快", "points": None}
    ]


def test_the_seed_rubrics_carry_wrong_claims():
    _, rubric = seed("004-s5-q4")
    assert any(c.wrong_claims for c in rubric.criteria)


def _pipeline(question_id):
    bank, rubrics = bank_of(question_id)
    yes = RecordingJudge(label_script=lambda r: {r.labels[0]: 0.0, r.labels[-1]: 1.0})
    return Pipeline(
        bank,
        rubrics,
        yes,
        Settings(judge=JudgeSettings(backend="scripted")),
        embedder=CountingEmbedder(),
    )


@pytest.mark.parametrize("answer_id", sorted(RESTATED))
def test_a_restated_question_gets_at_most_a_tenth_in_the_whole_grade(answer_id):
    case = next(c for c in lines("seed_answers_2.jsonl") if c["id"] == answer_id)
    submission = Submission(id=case["id"], question_id=case["question_id"], answer=case["answer"])
    (grade,) = _pipeline(case["question_id"]).grade_many([submission])
    assert grade.score <= 0.1 * grade.max_score  # a judge saying yes to everything
    assert ReviewCode.RESTATED_QUESTION in {r.code for r in grade.review_reasons}


def test_a_rescored_grade_keeps_the_recorded_cap():
    case = next(c for c in lines("seed_answers_2.jsonl") if c["id"] == "set2-096")
    submission = Submission(id=case["id"], question_id=case["question_id"], answer=case["answer"])
    (grade,) = _pipeline(case["question_id"]).grade_many([submission])
    _, rubric = seed(case["question_id"])
    again = rescored(grade, load_scorer("default"), 0.5, answer=case["answer"], rubric=rubric)
    assert again is not None and again.score <= 0.5
    assert [r.code for r in again.review_reasons].count(ReviewCode.RESTATED_QUESTION) == 1
    assert again.feedback.count("复述了题目") == 1
