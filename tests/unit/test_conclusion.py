"""The decisive part: reading a student's conclusion by rules, deriving what it must be, and
the cap a wrong one puts on the final grade."""

from __future__ import annotations

import json
import time

import pytest

from grader.config import JudgeSettings, Settings
from grader.engine.finish.conclusion import apply_conclusion
from grader.engine.pipeline import Pipeline
from grader.engine.reading.conclusion_derive import derive_conclusion
from grader.engine.reading.conclusion_read import read_conclusion, verdict_of
from grader.engine.reading.formulas import equivalent, parse, plain, same_growth
from grader.engine.reading.rubrics import rubric_for, rubric_problems
from grader.models import (
    Bank,
    Conclusion,
    Criterion,
    Grade,
    Question,
    QuestionType,
    Rubric,
    Submission,
)
from tests.judges import RecordingJudge
from tests.stack_question import FULL, RUBRIC, Q

FALSE = Conclusion(kind="verdict", expected="错误")
TWO_POWER = Conclusion(kind="formula", expected="2^(n-1)")
LINKED = derive_conclusion("该线性表宜采用何种存储结构？", "建议采用链式存储结构。", "zh")


@pytest.mark.parametrize(
    "answer, verdict",
    [
        ("错误，栈底元素可以删除", False),
        ("答：不正确。当栈中只有一个元素时……", False),
        ("这个说法是错的，因为……", False),
        ("錯誤，棧底元素可以刪除", False),
        ("不對，只剩一個元素時可以刪除", False),
        ("正確。", True),
        ("不一定，可能一边进栈一边出栈", False),
        ("并非如此，栈底元素最后可以删除", False),
        ("否。栈底在上面元素被删除后成为栈顶", False),
        ("不是，只剩一个元素时可以删除", False),
        ("错，只有一次全部进栈才成立", False),
        ("× 栈底元素可以删除", False),
        ("√ 因为栈只能在栈顶操作", True),
        ("The statement is false: the bottom can be popped last.", False),
        ("Not necessarily, elements can be popped in between.", False),
        ("It is true.", True),
        ("该叙述是否正确？正确。", True),  # the question's own words are not a verdict
        ("对于栈来说，这是正确的", True),  # 对于 is not 对
        ("这不是错误的说法", True),  # negated
        ("例如 3×2 的情况。正确", True),  # × between figures is a product
        ("栈底元素可以最后删除", None),
    ],
)
def test_verdict_words_with_negation_hedges_traditional_and_english(answer, verdict):
    found = verdict_of(answer)
    assert (found[0] if found else None) == verdict


def test_the_first_decisive_verdict_counts_with_its_sentence_as_evidence():
    reading = read_conclusion(FALSE, "正确。栈是后进先出的。有人说这是错误的，但不对。")
    assert reading.decision == "mismatch" and reading.read == "true"
    assert reading.evidence == "正确" and reading.confidence >= 0.9
    assert read_conclusion(FALSE, "栈底元素最后才能删除").decision == "undecided"


@pytest.mark.parametrize(
    "written", ["2**(n-1)", "2的n-1次方", "2的（n-1）次方", "2ⁿ⁻¹", "pow（2，n-1）", "2^（n-1）"]
)
def test_formulas_equal_however_written(written):
    assert equivalent(parse(plain("2^(n-1)")), parse(plain(written))) is True


def test_formula_comparisons():
    half = parse("n/2")
    assert equivalent(half, parse(plain("0.5n"))) is True
    assert equivalent(half, parse("(n-1)/2")) is False
    assert equivalent(parse("2^(n-1)"), parse("2^n-1")) is False
    assert equivalent(parse("2^(n-1)"), parse("2^(i-1)")) is None  # another variable: unread
    assert parse(plain("2 n−1")) is None  # a superscript lost in copying, not a product
    assert same_growth(parse("n"), parse("2n")) is True
    assert same_growth(parse(plain("nlogn")), parse(plain("n*log2(n)"))) is True
    assert same_growth(parse("n^2"), parse("n")) is False


def test_reading_values_any_match_else_the_last_formula():
    assert read_conclusion(TWO_POWER, "共有n-1个分支结点，所以共有2^(n-1)个").decision == "match"
    wrong = read_conclusion(TWO_POWER, "一共有n-1个节点可以有孩子，所以一共有2^n-1个。")
    assert (wrong.decision, wrong.read) == ("mismatch", "2^n-1")
    assert read_conclusion(TWO_POWER, "1").decision == "mismatch"
    assert read_conclusion(TWO_POWER, "2\nn−1\n个").decision == "undecided"
    assert read_conclusion(TWO_POWER, "个数是2^(i-1)").decision == "undecided"
    assert read_conclusion(TWO_POWER, "不知道").decision == "undecided"
    big_o = Conclusion(kind="complexity", expected="O(1)")
    assert read_conclusion(big_o, "时间复杂度为O⑴").decision == "match"
    assert read_conclusion(big_o, "需要遍历，时间复杂度 O(n)").decision == "mismatch"


def test_reading_choices_by_text_and_synonyms():
    assert LINKED is not None and LINKED.kind == "choice"
    assert read_conclusion(LINKED, "宜采用链表结构，若使用顺序表要移动元素").decision == "match"
    assert read_conclusion(LINKED, "链式储存结构。因为……").decision == "match"
    assert read_conclusion(LINKED, "采用顺序表，因为可以随机访问").decision == "mismatch"
    assert read_conclusion(LINKED, "看具体情况").decision == "undecided"


def test_hostile_answers_cost_bounded_work():
    """Every pattern is linear: 4x the text costs about 4x, nowhere near 16x (quadratic)."""
    pieces = ["2的", "(", "不", "O(", "1 ", "对于", "^2", "链", "n*"]

    def cost(size: int) -> float:
        text = "".join(p * size for p in pieces)
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            for conclusion in (FALSE, TWO_POWER, LINKED):
                read_conclusion(conclusion, text)  # type: ignore[arg-type]
            best = min(best, time.process_time() - start)
        return max(best, 1e-4)

    assert cost(8000) / cost(2000) < 9
    for deep in ("2^" * 20000 + "2", "1+" * 20000 + "1", "-" * 20000 + "1", "(" * 20000 + "n"):
        assert parse(deep) is None  # no recursion past a bound, however it is nested
        assert read_conclusion(TWO_POWER, deep).decision in {"mismatch", "undecided"}
    assert parse("((n^64)^64)^64") is not None
    assert parse("((n^64)^64)^64").at({"n": 11}) is None  # gives up rather than compute


def test_derivation_from_question_and_reference():
    tf = derive_conclusion("请判断以下叙述是否正确，并做出解释：栈底元素是不能删除的元素",
                           "错误。栈中元素可以……", "zh")  # fmt: skip
    assert tf == Conclusion(kind="verdict", expected="错误")
    count = derive_conclusion("有n个节点并且高度为n的二叉树的个数是多少?",
                              "分支节点共有n-1个，因此这种树的总数为2^(n-1)种。", "zh")  # fmt: skip
    assert count == Conclusion(kind="formula", expected="2^(n-1)")
    big_o = derive_conclusion("在双链表中删除节点的时间复杂度是多少？", "可以，O(1)。", "zh")
    assert big_o == Conclusion(kind="complexity", expected="O(1)")
    assert LINKED is not None and LINKED.expected == "链式存储结构" and "顺序表" in LINKED.wrong
    # two quantities asked, or no conclusion-shaped question: nothing derived
    assert (
        derive_conclusion("插入平均移动多少个？若概率为…，又是多少？", "n/2；(2n+1)/3", "zh")
        is None
    )
    assert derive_conclusion("简述顺序表和链表的特点", "顺序表O(1)，链表O(n)", "zh") is None
    assert derive_conclusion("How many constructors can a class have?", "Unlimited.", "en") is None


def test_derived_rubric_carries_it_and_a_rubric_without_one_keeps_its_version():
    q = Question(id="t1", number="1", section="判断说明", type=QuestionType.SHORT_ANSWER,
                 stem="请判断以下叙述是否正确：顺序栈中元素值是有序的", answer="错误。不一定有序。",
                 points=10)  # fmt: skip
    assert rubric_for(q, {}).conclusion == FALSE
    plain_rubric = Rubric(question_id="q", points=5, criteria=[Criterion(id="C1", description="x", points=5)])  # fmt: skip
    assert "conclusion" not in plain_rubric.model_dump(mode="json")
    assert plain_rubric.version == "d0dece49efcb"  # as before rubrics could have a conclusion
    bad = plain_rubric.model_copy(update={"question_id": "t1", "points": 10.0,
        "criteria": [Criterion(id="C1", description="d", points=10)],
        "conclusion": Conclusion(kind="formula", expected="很多")})  # fmt: skip
    assert any("conclusion" in p for p in rubric_problems(bad, q))


# --- the cap in a graded pipeline run -------------------------------------------------------


def graded(answers: list[str], rubric: Rubric = RUBRIC) -> list[Grade]:
    judge = RecordingJudge(lambda r: FULL)
    settings = Settings(judge=JudgeSettings(backend="scripted", mode="verdict"))
    pipeline = Pipeline(Bank(name="t", questions=[Q]), {"q1": rubric}, judge, settings)
    subs = [Submission(id=f"s{i}", question_id="q1", answer=a) for i, a in enumerate(answers)]
    return pipeline.grade_many(subs)


def test_a_wrong_verdict_caps_the_final_grade_and_says_why():
    right, wrong, unread = graded(["错误，栈底元素可以最后删除", "正确，栈底元素不能最后删除",
                                   "栈底元素可以最后删除"])  # fmt: skip
    assert right.score == 4 and right.details.conclusion.decision == "match"
    assert wrong.score == 0 and [c.points for c in wrong.criteria] == [0, 0]
    record = wrong.details.conclusion
    assert record.decision == "mismatch" and record.cap == 0 and record.capped_from == 4
    assert record.evidence.startswith("正确") and record.expected == "错误"
    assert wrong.feedback is not None and wrong.feedback.startswith(
        "结论错误：应为「错误」，答案为「正确」"
    )
    assert unread.score == 4 and unread.needs_review
    assert "conclusion_undecided" in [r.code for r in unread.review_reasons]


def test_a_cap_is_a_ceiling_not_a_subtraction_and_the_gate_can_be_switched_off():
    fifth = RUBRIC.model_copy(update={"conclusion": FALSE.model_copy(update={"cap": 0.25})})
    (wrong,) = graded(["正确，栈底元素不能最后删除"], fifth)
    assert wrong.score == 1 and sum(c.points for c in wrong.criteria) == pytest.approx(1)
    off = RUBRIC.model_copy(update={"conclusion": FALSE.model_copy(update={"gate": False})})
    (kept,) = graded(["正确，栈底元素不能最后删除"], off)
    assert kept.score == 4 and kept.details.conclusion.decision == "mismatch"
    assert "capped_from" not in kept.details.conclusion


def test_without_a_judge_the_reading_is_still_recorded():
    pipeline = Pipeline(
        Bank(name="t", questions=[Q]),
        {"q1": RUBRIC},
        None,
        Settings(judge=JudgeSettings(backend="none")),
    )
    answer = "正确，栈底元素不能最后删除"
    (grade,) = pipeline.grade_many([Submission(id="s", question_id="q1", answer=answer)])
    assert grade.status == "needs_judge" and grade.details.conclusion.decision == "mismatch"


def test_a_rescore_without_the_rubric_applies_the_recorded_cap_once():
    (wrong,) = graded(["正确，栈底元素不能最后删除"])
    again = apply_conclusion(wrong.model_copy(update={"score": 3.0}), None, None)
    assert again.score == 0 and again.feedback == wrong.feedback


def test_rubric_check_shows_the_derived_conclusion(tmp_path):
    from typer.testing import CliRunner

    from grader.bank.files import save_bank
    from grader.cli import app

    path = tmp_path / "ads.yaml"
    save_bank(Bank(name="ads", questions=[Q]), path)
    result = CliRunner().invoke(app, ["rubric", "check", str(path)], env={"COLUMNS": "240"})
    assert "verdict: 错误 (cap 0%)" in result.output, result.output


def test_a_drafted_rubric_proposes_the_conclusion_for_review():
    from grader.engine.judging.draft import draft_rubric

    proposal = {
        "criteria": [{"description": "判断并解释", "points": 4, "key_points": ["可以删除"]}]
    }
    judge = RecordingJudge(lambda r: json.dumps(proposal, ensure_ascii=False))
    rubric = draft_rubric(Q, judge)
    assert rubric.conclusion == FALSE and not rubric.reviewed
    assert rubric_problems(rubric, Q) == []


def test_a_rescore_by_another_scorer_keeps_the_cap():
    from grader.engine.finish.rescored import rescored
    from grader.engine.scoring.scorer_model import load_scorer

    features = {"reference_margin": 0.1, "semantic_coverage": 0.9, "ngram_coverage": 0.8,
                "length_log_ratio": 0.0, "cohort_reference_z": 0.5, "language": "zh"}  # fmt: skip
    before = Grade(
        submission_id="s1", question_id="q1", status="graded", score=3.0, max_score=4,
        method="judge", criteria=[], details={"judge_points": {},
        "scorer": {"version": "old", "decided_by": "signals", "share": 0.75, "features": features,
                   "contributions": {}, "neighbours": [], "copies": []}},
    )  # fmt: skip
    before = before.model_copy(
        update={"criteria": graded(["错误，栈底元素可以最后删除"])[0].criteria}
    )
    answer = "正确，栈底元素不能最后删除"
    assert rescored(before, load_scorer("default"), 0.6).score > 0  # no rubric, nothing recorded
    new = rescored(before, load_scorer("default"), 0.6, answer=answer, rubric=RUBRIC)
    assert new.score == 0 and new.details.conclusion.decision == "mismatch"
    assert rescored(new, load_scorer("default"), 0.6).score == 0  # the recorded cap stands


def test_rule_zeros_and_grades_under_the_cap_are_left_alone():
    (blank,) = graded([""])
    assert blank.method == "rule" and not blank.details.has("conclusion") and not blank.needs_review
    zero = Grade(submission_id="s", question_id="q1", status="graded", score=0.0, max_score=4,
                 method="judge")  # fmt: skip
    unread = apply_conclusion(zero, RUBRIC, "栈底元素可以最后删除")
    assert unread.details.conclusion.decision == "undecided" and not unread.needs_review
