"""Answer keys as the importer reads them, and fill-in alternatives graded by the objective grader."""

import pytest

from grader.bank.files import import_papers
from grader.bank.keys import alternatives, blanks, choice_key, true_false_key
from grader.engine.reading.objective import grade_objective
from tests.conftest import ROOT

PAPERS = ROOT / "tests" / "data" / "papers"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("反向传播或BP算法", ["反向传播", "BP算法"]),
        ("显存/内存", ["显存", "内存"]),
        ("连续（continuous）", ["连续", "continuous", "连续（continuous）"]),
        ("TCP/IP", ["TCP/IP"]),  # a Latin term, not two alternatives
        ("backward()", ["backward()"]),
        ("f(x)", ["f(x)"]),
        ("4。", ["4"]),
    ],
)
def test_alternatives_of_one_blank(text, expected):
    assert alternatives(text) == expected


@pytest.mark.parametrize(
    ("stem", "answer", "expected"),
    [
        ("____和____", "梯度；学习率", [["梯度"], ["学习率"]]),
        ("（ ）和（ ）", "（1）梯度（2）学习率或lr", [["梯度"], ["学习率", "lr"]]),
        ("只有一个____", "梯度；学习率", [["梯度；学习率"]]),  # one blank: not split
    ],
)
def test_blanks_split_per_blank(stem, answer, expected):
    assert blanks(stem, answer) == expected


@pytest.mark.parametrize(
    ("text", "key", "explanation"),
    [
        ("B", "B", None),
        ("A、C、D", "ACD", None),
        ("B(主键唯一)", "B", "主键唯一"),
        ("C。因为隔离", "C", "因为隔离"),
        ("Adam", None, None),
    ],
)
def test_choice_key_and_what_follows_it(text, key, explanation):
    assert choice_key(text) == (key, explanation)


@pytest.mark.parametrize(
    ("text", "value", "explanation"),
    [
        ("错误（类推已废止）", False, "类推已废止"),
        ("√", True, None),
        ("T", True, None),
        ("对。理由见教材", True, "理由见教材"),
        ("对数函数是增函数", None, None),  # 对 must end at punctuation to be a mark
    ],
)
def test_true_false_key_and_what_follows_it(text, value, explanation):
    assert true_false_key(text) == (value, explanation)


@pytest.fixture(scope="module")
def fill_bank():
    bank, _ = import_papers([PAPERS / "fill-alternatives.txt"], "fill")
    return {q.number: q for q in bank.questions}


@pytest.mark.parametrize(
    ("number", "answer", "points"),
    [
        ("1", "BP算法", 2),  # A或B: either
        ("1", "反向传播", 2),
        ("2", "批归一化", 2),  # A/B
        ("3", "positional", 2),  # A（B）: the bracketed term alone
        ("3", "位置", 2),
        ("3", "时间", 0),
        ("4", "动量；自适应学习率", 4),  # two blanks
        ("4", "动量；学习率", 2),  # one of two
        ("5", "尺寸，步长，平均", 6),  # three blanks, alternatives in each
        ("6", "(0,1)", 2),
    ],
)
def test_imported_alternatives_grade_as_accepted_answers(fill_bank, number, answer, points):
    q = fill_bank[number]
    assert grade_objective(q, answer, q.points).points == points
