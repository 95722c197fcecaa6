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


def test_shared_part_is_padded_to_whole_cache_blocks():
    from grader.judge.block_align import pad_to_block, shared_cut

    rendered = "<s>system</s><u>题目……答案</student_answer>\n\n第2项？</u><a>"
    content = "题目……答案</student_answer>\n\n第2项？"
    cut = shared_cut(rendered, content, len("题目……答案</student_answer>\n\n"))
    assert rendered[cut:] == "第2项？</u><a>"
    # nothing to share, or a content the rendering does not hold: no cut, no padding
    assert shared_cut(rendered, content, None) is None
    assert shared_cut(rendered, content, 0) is None
    assert shared_cut(rendered, "另一个内容", 3) is None
    assert shared_cut(rendered, content, len(content) + 1) is None

    assert pad_to_block([1] * 30, [7, 8], 32, 0) == [1] * 30 + [0, 0] + [7, 8]
    assert pad_to_block([1] * 32, [7], 32, 0) == [1] * 32 + [7]  # already on a boundary
    assert len(pad_to_block([1] * 33, [], 32, 0)) == 64


def test_probability_requests_mark_what_the_checks_of_an_answer_share():
    from grader.engine.judging.probability_requests import ProbabilityPrefix
    from grader.models import Criterion, Question, QuestionType, Rubric

    question = Question(id="q", number="1", section="简答题", type=QuestionType.SHORT_ANSWER,
                        stem="什么是梯度累加？", answer="多个小批次的梯度相加后再更新。", points=2)  # fmt: skip
    rubric = Rubric(question_id="q", points=2, criteria=[
        Criterion(id="C1", description="定义", points=1, key_points=["梯度相加"]),
        Criterion(id="C2", description="目的", points=1, key_points=["模拟大批次"]),
    ])  # fmt: skip
    first, second = ProbabilityPrefix.build(question, rubric, []).requests("s1", "把梯度加起来")
    a, b = first.messages[-1]["content"], second.messages[-1]["content"]
    assert first.shared_chars == second.shared_chars
    shared = a[: first.shared_chars]
    # the shared part runs through the answer and stops where the checks' questions differ
    assert b.startswith(shared) and "</student_answer>" in shared
    assert a[first.shared_chars :] != b[second.shared_chars :]
