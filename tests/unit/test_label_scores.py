"""The label protocol's shared parts: renormalising a next-token distribution, and the scripted
backend's deterministic stand-in for a model."""

import pytest

from grader.judge.base import LabelRequest, LabelScores, renormalise
from grader.judge.scripted import ScriptedJudge


def ask(answer: str, subject: str, labels=("0", "1", "2")) -> LabelRequest:
    return LabelRequest(
        id=answer, group="g", labels=labels, subject=subject, answer=answer,
        messages=[{"role": "user", "content": answer}],
    )  # fmt: skip


def test_renormalise_keeps_only_the_labels():
    scores = renormalise({"是": 0.6, "否": 0.2, "The": 0.1}, ("否", "是"))
    assert scores.probabilities == pytest.approx({"否": 0.25, "是": 0.75})
    assert scores.mass == pytest.approx(0.8)
    # a label below the backend's top tokens counts 0, the others still sum to 1
    assert renormalise({"是": 0.5}, ("否", "是")).probabilities == {"否": 0.0, "是": 1.0}
    empty = renormalise({"The": 0.9}, ("否", "是"))
    assert empty.error and not empty.probabilities


def test_scripted_labels_follow_the_answer():
    judge = ScriptedJudge()
    point = "每个micro-batch的loss除以累积步数"
    full, none = judge.score_labels(
        [
            ask("我会把每个micro-batch的loss除以累积步数再反向传播", point),
            ask("今天天气很好", point),
        ]
    )
    for s in (full, none):
        assert sum(s.probabilities.values()) == pytest.approx(1.0)
    assert max(full.probabilities, key=full.probabilities.get) == "2"
    assert max(none.probabilities, key=none.probabilities.get) == "0"
    # deterministic: the same request gives the same distribution
    assert judge.score_labels([ask("今天天气很好", point)])[0] == none


def test_scripted_label_script_can_fail_one_item():
    def script(request):
        if request.answer == "boom":
            raise RuntimeError("bad item")
        return LabelScores(probabilities={"否": 0.5, "是": 0.5}, mass=0.9)

    judge = ScriptedJudge(label_script=script)
    ok, bad = judge.score_labels([ask("fine", "x", ("否", "是")), ask("boom", "x", ("否", "是"))])
    assert ok.mass == 0.9 and bad.error == "script failed: bad item"


def test_prefix_waves_compute_each_shared_prefix_once():
    from grader.judge.base import LabelRequest, prefix_waves

    def req(group, answer, n):
        return LabelRequest(
            id=f"{group}/{answer}/{n}", group=group, answer=answer,
            messages=[{"role": "user", "content": answer}], labels=("否", "是"),
        )  # fmt: skip

    requests = [req("q1", "a", 1), req("q1", "a", 2), req("q1", "b", 1), req("q1", "b", 2),
                req("q2", "a", 1), req("q2", "c", 1), req("q2", "c", 2)]  # fmt: skip
    # a question's first request, then each other answer's first, then every other check
    assert prefix_waves(requests) == [[0, 4], [2, 5], [1, 3, 6]]
    assert prefix_waves(requests[:1]) == [[0]]
    assert prefix_waves([]) == []


def test_a_prompt_splits_where_its_shared_parts_end():
    from grader.judge.block_align import Cuts, cuts, pad_between

    user = "题目……\n\n参考答案……\n\n学生答案：\n<student_answer>\n答案\n</student_answer>"
    head_chars = user.index("答案\n</student_answer>")
    rendered = f"<s>规则</s><u>{user}</u><a>第2项："
    at = cuts(rendered, user, "第2项：", head_chars)
    # blank lines go before the head's last paragraph and at the end of the user's turn
    assert rendered[: at.head_pad].endswith("参考答案……")
    assert rendered[at.head_pad : at.head_end] == "\n\n学生答案：\n<student_answer>\n"
    assert rendered[at.head_end : at.turn_pad] == "答案\n</student_answer>"
    assert rendered[at.turn_pad : at.reply] == "</u><a>"
    assert rendered[at.reply :] == "第2项："
    # no known head: only the answer's turn is aligned
    assert cuts(rendered, user, "第2项：", None) == Cuts(0, 0, at.turn_pad, at.reply)
    # a head without a paragraph break: its blank lines go at the start of the user's message
    assert cuts(f"<u>{user}</u>", user, "", 5).head_pad == len("<u>")
    # messages the rendering does not hold, or a head longer than the message: no layout
    assert cuts(rendered, "另一个内容", "第2项：", 3) is None
    assert cuts(rendered, user, "第2项：", len(user) + 1) is None

    assert pad_between(0, [1] * 20, [2] * 10, 32, 0) == [1] * 20 + [0, 0] + [2] * 10
    assert pad_between(32, [1] * 30, [2] * 2, 32, 0) == [1] * 30 + [2] * 2  # on a boundary
    assert len(pad_between(3, [1] * 30, [], 32, 0)) == 61  # 3 + 61 = 64


def test_label_requests_mark_what_the_checks_of_an_answer_share():
    from grader.engine.label_requests import LabelPlan
    from grader.models import Criterion, Question, QuestionType, Rubric

    question = Question(id="q", number="1", section="简答题", type=QuestionType.SHORT_ANSWER,
                        stem="什么是梯度累加？", answer="多个小批次的梯度相加后再更新。", points=2)  # fmt: skip
    rubric = Rubric(question_id="q", points=2, criteria=[
        Criterion(id="C1", description="定义", points=1, key_points=["梯度相加"]),
        Criterion(id="C2", description="目的", points=1, key_points=["模拟大批次"]),
    ])  # fmt: skip
    first, second = LabelPlan.build(question, rubric, []).requests("s1", "把梯度加起来", "raw")
    # the whole conversation is shared, through the answer and the instruction to judge item
    # by item; each check is only the opening of the judge's reply, continued by the label
    assert first.messages[:-1] == second.messages[:-1]
    assert "</student_answer>" in first.messages[-2]["content"]
    assert first.messages[-1] == {"role": "assistant", "content": "第1项："}
    assert second.messages[-1] == {"role": "assistant", "content": "第2项："}
    # the question's head, up to the answer, is the same for every answer
    other = LabelPlan.build(question, rubric, []).requests("s2", "另一个答案", "raw")[0]
    head = first.messages[-2]["content"][: first.head_chars]
    assert head.endswith("<student_answer>\n") and "把梯度加起来" not in head
    assert other.head_chars == first.head_chars == second.head_chars
    assert other.messages[-2]["content"][: other.head_chars] == head
