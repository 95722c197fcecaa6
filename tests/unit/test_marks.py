import pytest

from grader.bank.marks import choice_letters, true_false


@pytest.mark.parametrize(
    ("text", "letters"),
    [
        ("B", "B"),
        ("b", "B"),
        ("（B）", "B"),
        ("(b)", "B"),
        ("选B", "B"),
        ("選b", "B"),
        ("答案：B", "B"),
        ("Answer: c", "C"),
        ("B. PyTorch", "B"),
        ("B、C、D", "BCD"),
        ("a, b, d", "ABD"),
        ("ABD", "ABD"),
        ("DBA", "ABD"),
        ("A B D", "ABD"),
        ("A和C", "AC"),
        ("A and B", "AB"),  # not the "a" and "d" of "and"
        ("a, b and d", "ABD"),
        ("Ｂ", "B"),  # full-width
        ("【A】", "A"),
    ],
)
def test_choice_letters(text, letters):
    assert choice_letters(text) == letters


@pytest.mark.parametrize("text", ["", "不知道", "I have no idea", "123", "Z"])
def test_choice_letters_rejects_non_answers(text):
    assert choice_letters(text) is None


def test_choice_letters_by_option_text():
    options = {"A": "TensorFlow", "B": "PyTorch", "C": "Horovod"}
    assert choice_letters("pytorch", options) == "B"
    assert choice_letters("MXNet", options) is None


@pytest.mark.parametrize(
    "text", ["√", "✓", "✔", "对", "對", "正确", "正確", "T", "true", "True", "（√）"]
)
def test_true_marks(text):
    assert true_false(text) is True


@pytest.mark.parametrize(
    "text",
    ["×", "✗", "✘", "错", "錯", "错误", "錯誤", "不正确", "不正確", "F", "false", "(×)", "x"],
)
def test_false_marks(text):
    assert true_false(text) is False


@pytest.mark.parametrize("text", ["", "maybe", "也许", "√×"])
def test_true_false_rejects_non_answers(text):
    assert true_false(text) is None
