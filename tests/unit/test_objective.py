import pytest

from grader.engine.reading.objective import fill_key, grade_objective
from grader.models import MultipleChoiceCredit, Question, QuestionType

OPTIONS = {"A": "TensorFlow", "B": "PyTorch", "C": "Horovod", "D": "Spark"}


def question(qtype, answer, **extra):
    return Question(id="q", number="1", section="s", type=qtype, stem="…", answer=answer, **extra)


@pytest.mark.parametrize("given", ["b", "（B）", "选B", "B", "B. PyTorch", "pytorch"])
def test_single_choice_correct_in_any_style(given):
    q = question(QuestionType.SINGLE_CHOICE, "B", options=OPTIONS)
    result = grade_objective(q, given, 2)
    assert (result.points, result.correct, result.read_as) == (2, True, "B")


def test_single_choice_wrong_and_unreadable():
    q = question(QuestionType.SINGLE_CHOICE, "B", options=OPTIONS)
    assert grade_objective(q, "C", 2).points == 0
    unreadable = grade_objective(q, "no idea", 2)
    assert unreadable.points == 0 and unreadable.read_as is None
    assert [r.code for r in unreadable.reasons] == ["unreadable_answer"]


def test_answer_naming_a_missing_option_is_flagged():
    q = question(QuestionType.SINGLE_CHOICE, "B", options=OPTIONS)
    result = grade_objective(q, "E", 2)
    assert result.points == 0 and [r.code for r in result.reasons] == ["no_such_option"]


@pytest.mark.parametrize("given", ["BCD", "b, c, d", "D、C、B", "选BCD", "bcd"])
def test_multiple_choice_exact_set(given):
    q = question(QuestionType.MULTIPLE_CHOICE, "BCD", options=OPTIONS)
    assert grade_objective(q, given, 2).points == 2


@pytest.mark.parametrize(
    ("credit", "given", "points"),
    [
        (MultipleChoiceCredit.ALL_OR_NOTHING, "BC", 0),
        (MultipleChoiceCredit.ALL_OR_NOTHING, "ABCD", 0),
        (MultipleChoiceCredit.PARTIAL, "BC", 2),  # 2 of 3 correct letters of 3 points
        (MultipleChoiceCredit.PARTIAL, "AB", 0),  # any wrong letter: nothing
        (MultipleChoiceCredit.HALF, "B", 1.5),
        (MultipleChoiceCredit.HALF, "ABCD", 0),
    ],
)
def test_multiple_choice_credit_policies(credit, given, points):
    q = question(QuestionType.MULTIPLE_CHOICE, "BCD", options=OPTIONS)
    assert grade_objective(q, given, 3, credit).points == pytest.approx(points)


@pytest.mark.parametrize(
    ("given", "correct"),
    [("√", True), ("对", True), ("正确", True), ("T", True), ("true", True), ("✓", True),
     ("×", False), ("错", False), ("错误", False), ("不正确", False), ("F", False), ("✗", False)],
)  # fmt: skip
def test_true_false(given, correct):
    q = question(QuestionType.TRUE_FALSE, True)
    assert grade_objective(q, given, 1).correct is correct


def test_true_false_unreadable():
    q = question(QuestionType.TRUE_FALSE, False)
    result = grade_objective(q, "perhaps", 1)
    assert result.points == 0 and result.reasons[0].code == "unreadable_answer"


@pytest.mark.parametrize(
    ("key", "given"),
    [
        ("INT8", "int8"),  # case
        ("INT8", "ＩＮＴ８"),  # full-width
        ("梯度緩存", "梯度缓存"),  # Traditional ↔ Simplified
        ("梯度缓存", "梯度緩存"),
        ("邊緣計算", " 边缘 计算 "),  # spaces
        ("backward()", "backward（）"),  # full-width brackets
        ("4", "四"),  # Chinese numeral
        ("4", "4倍"),  # unit given, key has none
        ("4倍", "4"),  # unit omitted
        ("4", "4.0"),
        ("12", "十二"),
        ("0.8", "0.80"),
        ("50%", "50％"),
        ("批次大小", "批次大小。"),
    ],
)
def test_fill_blank_normalization(key, given):
    q = question(QuestionType.FILL_BLANK, key, blanks=[[key]])
    assert grade_objective(q, given, 1).points == 1, (fill_key(key), fill_key(given))


@pytest.mark.parametrize(
    ("key", "given"), [("4", "8"), ("4倍", "4%"), ("梯度", "学习率"), ("INT8", "INT4")]
)
def test_fill_blank_rejects_different_answers(key, given):
    q = question(QuestionType.FILL_BLANK, key, blanks=[[key]])
    assert grade_objective(q, given, 1).points == 0


def test_fill_blank_alternatives_and_several_blanks():
    q = question(
        QuestionType.FILL_BLANK,
        "数据；模型",
        blanks=[["数据", "数据并行"], ["模型", "模型并行"]],
    )
    assert grade_objective(q, "数据并行；模型", 2).points == 2
    assert grade_objective(q, "数据, 流水线", 2).points == 1
    short = grade_objective(q, "数据", 2)
    assert short.points == 1 and short.reasons[0].code == "blank_count"


def test_subjective_question_is_refused():
    with pytest.raises(ValueError, match="not objective"):
        grade_objective(question(QuestionType.SHORT_ANSWER, "text"), "x", 5)
