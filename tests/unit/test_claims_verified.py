"""Credit for what was verified: a criterion keeps what its decisive parts verify plus a
bounded share of the rest; nothing verified says so; a re-score is bound the same way; the
eight seed rubrics name their parts."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from grader.bank.files import load_bank
from grader.engine.finish import verified
from grader.engine.reading.rubrics import load_rubrics
from grader.models import (
    Criterion,
    CriterionScore,
    Grade,
    GradeStatus,
    Method,
    Part,
    ReviewCode,
    Rubric,
    WrongClaim,
)
from tests.conftest import RUBRICS

RUBRIC = Rubric(
    question_id="q1",
    points=4,
    criteria=[
        Criterion(
            id="C1", description="累加", points=2,
            parts=[Part(claim="梯度累加", when=[["梯度", "累加|加起来"]], pays=1),
                   Part(claim="不立即更新", when=[["!立即|马上", "更新"]], pays=1)],
        ),
        Criterion(
            id="C2", description="计算量不变", points=2,
            parts=[Part(claim="计算量不变", when=[["计算量", "@same"]])],
        ),
    ],
)  # fmt: skip


def scored(c1: float, c2: float) -> Grade:
    """A grade as the scorer leaves it: its total split over the criteria."""
    return Grade(
        submission_id="s1", question_id="q1", status=GradeStatus.GRADED, score=c1 + c2,
        max_score=4, method=Method.JUDGE, confidence=0.8,
        criteria=[CriterionScore(id="C1", points=c1, max_points=2, evidence="x"),
                  CriterionScore(id="C2", points=c2, max_points=2, evidence="y")],
    )  # fmt: skip


def test_nothing_verified_keeps_a_tenth_and_says_so():
    grade = verified.checked(scored(1.5, 1.5), "梯度累积很好用，大家都用它。", RUBRIC)
    assert grade.score == 0.0  # 10 % of each criterion's 2 points, floored to half points
    check = grade.details.claims
    assert (
        not any(check.verified.values())
        and check.unverified_share == verified.NOTHING_VERIFIED_SHARE
    )
    assert check.capped_from == 3.0 and check.withheld == 3.0
    assert [r.code for r in grade.review_reasons] == [ReviewCode.UNVERIFIED]
    assert grade.confidence == verified.UNVERIFIED_CONFIDENCE


def test_verified_parts_stand_with_their_clause_and_the_rest_is_bounded():
    answer = "每个小批次反向后把梯度加起来，期间不立即更新参数。"
    grade = verified.checked(scored(0.5, 2.0), answer, RUBRIC)
    c1, c2 = grade.criteria
    assert c1.points == 2.0 and "梯度加起来" in c1.evidence  # above the scorer's 0.5
    share = verified.share_for({"C1": 2.0, "C2": 0.0}, RUBRIC)  # half the points verified
    assert verified.NOTHING_VERIFIED_SHARE < share <= verified.UNVERIFIED_SHARE
    assert grade.score == math.floor((2.0 + share * 2.0) / 0.5) * 0.5  # in half points
    assert c2.points == grade.score - 2.0 and not grade.review_reasons
    assert {p.claim: p.status for p in grade.details.claims.parts} == {
        "梯度累加": "asserted", "不立即更新": "asserted", "计算量不变": "absent",
    }  # fmt: skip


def test_a_negated_part_verifies_nothing():
    grade = verified.checked(scored(2.0, 2.0), "每个小批次都立即更新参数，计算量不变。", RUBRIC)
    parts = {p.claim: p.status for p in grade.details.claims.parts}
    assert parts["不立即更新"] == "negated" and parts["计算量不变"] == "asserted"
    assert grade.details.claims.verified == {"C1": 0.0, "C2": 2.0}


def test_a_contradicted_criterion_loses_its_points_and_names_the_sentence():
    answer = "每个小批次反向后把梯度加起来，期间不立即更新参数。计算量并非不变。"
    grade = verified.checked(scored(2.0, 2.0), answer, RUBRIC)
    c1, c2 = grade.criteria
    assert c1.points == 2.0 and c2.points == 0.0 and grade.score == 2.0
    assert "计算量并非不变" in c2.evidence and c2.rationale == "与要点相反：计算量不变"
    # it keeps half the points on readings that disagree: a person decides
    assert [r.code for r in grade.review_reasons] == [ReviewCode.CONTRADICTED]
    assert grade.needs_review and "denied by «计算量并非不变»" in grade.review_reasons[0].message
    again = verified.reapply(grade, RUBRIC)  # a re-score decides it once more, not twice
    assert again.review_reasons == grade.review_reasons


def test_a_contradiction_voids_the_credit_for_similarity():
    grade = verified.checked(scored(2.0, 2.0), "计算量并非不变，梯度累积很常用。", RUBRIC)
    assert grade.details.claims.unverified_share == verified.NOTHING_VERIFIED_SHARE
    assert grade.score == 0.0  # C2 contradicted, C1 at most 5 % of its points
    # nothing left to decide between: no contradiction to review, only nothing verified
    assert [r.code for r in grade.review_reasons] == [ReviewCode.UNVERIFIED]


def test_a_generous_grade_on_little_verified_goes_to_review_whatever_the_ranking():
    from grader.engine.review.queue import is_hard, rank_grades

    # one of four points verified; the scorer's similarity lifts it over 30 % of the points
    thin = verified.checked(scored(2.0, 2.0), "每个小批次反向后把梯度加起来。", RUBRIC)
    assert thin.details.claims.verified == {"C1": 1.0, "C2": 0.0}
    assert thin.score > verified.GENEROUS_SHARE * RUBRIC.points
    assert [r.code for r in thin.review_reasons] == [ReviewCode.THINLY_VERIFIED]
    assert "only 1 were verified" in thin.review_reasons[0].message
    assert thin.confidence == verified.UNVERIFIED_CONFIDENCE
    assert is_hard(thin) and rank_grades([thin], share=0.0)[0].needs_review
    # half the points verified: the rest may be worded the answer's own way
    fuller = verified.checked(scored(2.0, 2.0), "梯度加起来，期间不立即更新参数。", RUBRIC)
    assert fuller.details.claims.verified["C1"] == 2.0 and not fuller.review_reasons
    # the scorer gives little: nothing generous to review
    low = verified.checked(scored(1.0, 0.0), "每个小批次反向后把梯度加起来。", RUBRIC)
    assert low.score <= verified.GENEROUS_SHARE * RUBRIC.points and not low.review_reasons
    # a re-score decides it once more, not twice
    assert verified.reapply(thin, RUBRIC).review_reasons == thin.review_reasons


def test_a_true_sentence_beside_its_criterions_wrong_claim_verifies_nothing():
    wrong = WrongClaim(claim="每个小批次都更新参数", when=[["每个小批次|每一步", "都更新|就更新"]])
    c1 = RUBRIC.criteria[0].model_copy(update={"wrong_claims": [wrong]})
    rubric = RUBRIC.model_copy(update={"criteria": [c1, RUBRIC.criteria[1]]})
    answer = "梯度累积就是把梯度加起来。每个小批次都更新参数，计算量不变。"
    grade = verified.checked(scored(2.0, 2.0), answer, rubric)
    check = grade.details.claims
    # C1's part is read asserted, but the answer asserts C1's listed wrong claim too
    assert {p.claim: p.status for p in check.parts}["梯度累加"] == "asserted"
    assert check.set_aside == ["C1"] and check.verified == {"C1": 0.0, "C2": 2.0}
    # C1 is bounded as an unverified criterion, at the share C2 alone earns
    assert check.unverified_share == verified.share_for({"C2": 2.0}, rubric)
    assert grade.criteria[0].rationale.startswith("不计验证")
    assert grade.criteria[0].points <= check.unverified_share * 2
    # without the wrong claim the same sentence verifies C1
    fine = verified.checked(scored(2.0, 2.0), "梯度累积就是把梯度加起来，计算量不变。", rubric)
    assert fine.details.claims.set_aside == [] and fine.details.claims.verified["C1"] == 1.0
    # a negated wrong claim sets nothing aside
    denied = "梯度累积就是把梯度加起来，并不是每个小批次都更新参数，计算量不变。"
    assert verified.checked(scored(2.0, 2.0), denied, rubric).details.claims.set_aside == []


def test_a_rescored_grade_is_bound_by_the_reading_recorded():
    answer = "每个小批次反向后把梯度加起来。"
    first = verified.checked(scored(1.0, 2.0), answer, RUBRIC)
    # the scorer speaks again (a refit): the recorded reading bounds it, no answer needed
    again = verified.reapply(scored(1.0, 2.0).model_copy(update={"details": first.details}), RUBRIC)
    assert again.score == first.score and again.criteria == first.criteria


def test_verified_only_cuts_unverified_points_and_never_raises():
    answer = "每个小批次反向后把梯度加起来，期间不立即更新参数。"  # C1's 2 points verified
    bounded = verified.checked(scored(1.5, 2.0), answer, RUBRIC)
    assert bounded.score == 2.5  # C2 kept a share of its points by similarity
    only = verified.verified_only(bounded)
    assert only.score == 2.0  # 2 verified + 5 % of the 2 unverified, in half points
    assert {c.id: c.points for c in only.criteria} == {"C1": 2.0, "C2": 0.0}
    assert only.details.claims.withheld == bounded.details.claims.withheld + 0.5
    assert verified.verified_only(only) == only  # already within: unchanged
    low = verified.checked(scored(0.5, 0.0), answer, RUBRIC)
    assert verified.verified_only(low).score == low.score == 2.0  # verified stand
    assert verified.verified_only(scored(1.5, 1.5)) == scored(1.5, 1.5)  # no reading: as is


def test_a_rubric_without_parts_is_left_to_the_scorer():
    plain = RUBRIC.model_copy(
        update={"criteria": [c.model_copy(update={"parts": []}) for c in RUBRIC.criteria]}
    )
    grade = scored(1.5, 1.5)
    assert verified.checked(grade, "任何回答", plain) == grade
    assert "parts" not in plain.model_dump()["criteria"][0]  # older files keep their versions


@pytest.mark.parametrize(
    "bank_name", ["ai_trainer_l2", "llm_trainer_solutions", "grad_accum_engineer"]
)
def test_every_criterion_of_the_seed_rubrics_names_its_decisive_parts(bank_name):
    path: Path = RUBRICS / f"{bank_name}.yaml"
    rubrics = load_rubrics(path, load_bank(path))  # patterns are checked on load
    assert rubrics
    for rubric in rubrics.values():
        for c in rubric.criteria:
            assert c.parts, f"{rubric.question_id} {c.id} names no decisive part"
            for wrong in c.wrong_claims:
                assert wrong.when, f"{rubric.question_id} {c.id}: {wrong.claim} has no pattern"


def test_a_bare_list_of_the_rubrics_terms_verifies_nothing_and_is_capped():
    from grader.engine.finish import substance
    from grader.engine.reading.claims.listing import keyword_list

    path = RUBRICS / "grad_accum_engineer.yaml"
    bank = load_bank(path)
    rubric = load_rubrics(path, bank)["004-s5-q1"]
    listed = "梯度累加 / 不立即更新 / 多个小批次 / 多次前向反向 / 不清零 / 累积步数 / 有效批次 / 模拟大批次"
    prose = "每个小批次前向反向后梯度累加，不立即更新；累积步数满了再更新，等效于大批次。"
    assert keyword_list(listed, rubric) and not keyword_list(prose, rubric)
    assert not any(
        verified.checked(scored(2.0, 2.0), listed, rubric).details.claims.verified.values()
    )
    found = substance.assess(listed, bank.get("004-s5-q1"), rubric)
    assert found.keywords_only and substance.capped(4.0, 5.0, found) == 0.5


def test_a_clause_that_repeats_the_stem_verifies_nothing():
    stem = "计算量不变是否正确？请说明计算量不变的原因。"
    said = "计算量不变是否正确？请说明计算量不变的原因。"
    grade = verified.checked(scored(1.0, 1.0), said, RUBRIC, stem=stem)
    assert grade.details.claims.verified["C2"] == 0.0
    assert verified.checked(scored(1.0, 1.0), said, RUBRIC).details.claims.verified["C2"] == 2.0


def test_terms_between_spaces_are_a_keyword_list_but_a_sentence_or_a_program_is_not():
    from grader.engine.reading.claims.listing import keyword_list

    path = RUBRICS / "grad_accum_engineer.yaml"
    rubric = load_rubrics(path, load_bank(path))["004-s5-q3"]
    spaced = "梯度累积 PyTorch optimizer zero_grad loss backward accum_steps .grad step 显存 尾批"
    spaced += " no_sync"
    terse = "zero_grad 先 loss/N backward 累加 .grad 每N步 step"  # a student's notes: too few
    sentence = "divide the loss by accum steps then call backward and step once every N batches"
    program = "```python\nloss = loss / accum_steps\nloss.backward()\noptimizer.step()\n```"
    program += "\nzero_grad、backward、step、GradScaler、no_sync、clip_grad_norm_"
    assert keyword_list(spaced, rubric) and not keyword_list(terse, rubric)
    assert not keyword_list(sentence, rubric) and not keyword_list(program, rubric)
    assert not keyword_list("梯度累积 就是 把 梯度 加起来, then step", rubric)


def test_terms_between_commas_are_a_keyword_list_but_an_english_sentence_is_not():
    """Held-out hold20-006 listed twelve of the rubric's terms between commas and kept 6.5 of
    10 unflagged; terse notes run shorter, and a sentence has function words."""
    from grader.engine.reading.claims.listing import keyword_list

    path = RUBRICS / "ai_trainer_l2.yaml"
    rubric = load_rubrics(path, load_bank(path))["000-s4-q51"]
    commas = (
        "ZeRO-3, all-gather, reduce-scatter, offload, pin_memory, bf16, 16 bytes, 2.88TB, "
        "45GB, checkpointing, overlap_comm, PCIe"
    )
    terse = "ZeRO-3, bf16, micro-batch 1, 16 bytes per parameter, 2.88TB, 45GB per GPU"
    sentence = (
        "ZeRO-3 shards the weights, the gradients and the optimizer states, so each of the 64 "
        "GPUs holds 45GB, with bf16, offload, pin_memory, overlap_comm, checkpointing and PCIe"
    )
    assert keyword_list(commas, rubric)
    assert not keyword_list(terse, rubric) and not keyword_list(sentence, rubric)


def test_a_formula_is_no_keyword_list():
    from grader.engine.reading.claims.listing import keyword_list

    rubric = Rubric(question_id="q", points=1, criteria=[Criterion(
        id="C1", description="平均比较次数", points=1,
        key_points=["n/2", "(n-i)", "n*(n+1)/2", "平均", "比较", "次数"],
    )])  # fmt: skip
    assert not keyword_list("n/2; (n-i)/(n*(n+1)/2)*n/2", rubric)
