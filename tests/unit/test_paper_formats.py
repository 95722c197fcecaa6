"""Each format variant the importer must read, on small papers written for the test."""

import pytest

from grader.bank.paper import parse_paper
from grader.errors import BankError
from grader.models import QuestionType as T


def parse(text):
    return parse_paper(text, file="paper.txt", slug="p")


def test_run_together_simplified_paper_with_inline_answers():
    paper = (
        "期末考试试卷一、单项选择题（每题2分，共4分）1.在A100上训练时，显存最大的是（）A.80GB"
        "B.40GBC.16GBD.8GB答案：A解析：A100有80GB版本。2.用于反向传播的函数是A、forward()"
        "B、backward()C、step()D、zero_grad()答案：B二、多选题（每题3分）1.以下属于并行策略的有"
        "A．数据并行B．张量并行C．梯度裁剪D．流水线并行答案：A、B、D三、判断题（每题1分）1.LoRA会增加"
        "推理延迟。（×）2.ZeRO-3会切分优化器状态。（√）四、填空题（每题1分）1.梯度累积模拟更大的____。"
        "答案：批次大小"
    )
    result = parse(paper)
    qs = result.questions
    assert [q.type for q in qs] == [T.SINGLE_CHOICE] * 2 + [T.MULTIPLE_CHOICE] + [
        T.TRUE_FALSE
    ] * 2 + [T.FILL_BLANK]
    assert qs[0].stem == "在A100上训练时，显存最大的是"  # "A100" is not option A
    assert qs[0].options == {"A": "80GB", "B": "40GB", "C": "16GB", "D": "8GB"}
    assert qs[0].answer == "A" and qs[0].explanation == "A100有80GB版本。" and qs[0].points == 2
    assert qs[1].options["B"] == "backward()" and qs[1].answer == "B"
    assert qs[2].options["D"] == "流水线并行" and qs[2].answer == "ABD" and qs[2].points == 3
    assert [qs[3].answer, qs[4].answer] == [False, True]
    assert qs[3].stem == "LoRA会增加推理延迟。"
    assert qs[5].answer == "批次大小" and qs[5].blanks == [["批次大小"]]
    # numbers restart per section, ids stay unique and keep the printed number
    assert [q.id for q in qs] == ["p-s1-q1", "p-s1-q2", "p-s2-q1", "p-s3-q1", "p-s3-q2", "p-s4-q1"]
    assert [q.number for q in qs] == ["1", "2", "1", "1", "2", "1"]
    assert qs[0].section == "一、单项选择题"
    assert result.title == "期末考试试卷"
    assert not result.report


def test_one_per_paragraph_with_options_on_their_own_lines_and_collected_answers():
    paper = """测验

一、单选题（共2题）

1.以下哪个是优化器？

A.Adam

B.ReLU

2.B.model指的是什么？

A.一个变量

B.model.to()方法

答案：

1.A

2.B

解析：

1.Adam是优化器。

2.见文档。

二、判断题（共1题）

1.梯度累积会增加显存。

正确（）不正确（）

答案：不正确

解析：它减少显存。
"""
    result = parse(paper)
    q1, q2, q3 = result.questions
    assert q1.options == {"A": "Adam", "B": "ReLU"} and q1.answer == "A"
    assert q1.explanation == "Adam是优化器。"
    assert q2.stem == "B.model指的是什么？"  # "B.model" in a stem is not option B
    assert q2.options == {"A": "一个变量", "B": "model.to()方法"} and q2.answer == "B"
    assert q3.type is T.TRUE_FALSE and q3.answer is False
    assert q3.stem == "梯度累积会增加显存。" and q3.explanation == "它减少显存。"
    assert q1.source.line == 5 and q3.source.line == 31
    # the paper prints no points: that is reported for each question, and nothing else is
    assert {(e.problem, e.question) for e in result.report} == {
        ("no_points", "p-s1-q1"),
        ("no_points", "p-s1-q2"),
        ("no_points", "p-s2-q1"),
    }


@pytest.mark.parametrize(
    ("marker", "answer"),
    [
        ("【答案】", "C"),
        ("参考答案：", "C"),
        ("答案:", "C"),
        ("【参考答案】", "C"),
        ("正确答案：", "C"),
    ],
)
def test_answer_marker_variants(marker, answer):
    paper = f"一、单项选择题\n1.题干\nA.甲\nB.乙\nC.丙\n{marker}{answer}\n【解析】因为丙。"
    (q,) = parse(paper).questions
    assert q.answer == answer and q.explanation == "因为丙。"


@pytest.mark.parametrize(("mark", "value"), [("答案：正确", True), ("答案：错误", False), ("答案：√", True), ("答案：×", False), ("（√）", True), ("(×)", False)])  # fmt: skip
def test_true_false_answer_styles(mark, value):
    paper = f"一、判断题\n1.说法一。{mark}\n2.说法二。答案：对"
    q1, q2 = parse(paper).questions
    assert q1.answer is value and q2.answer is True


def test_traditional_headers_and_points():
    paper = "一、單項選擇題（每題1分，共2分）1.甲A.一B.二答案：A2.乙A.一B.二答案：B二、簡答題（每題10分，共10分）1.簡述原理。答案：原理是累積梯度。"
    qs = parse(paper).questions
    assert [q.type for q in qs] == [T.SINGLE_CHOICE, T.SINGLE_CHOICE, T.SHORT_ANSWER]
    assert [q.points for q in qs] == [1, 1, 10]
    assert qs[2].answer == "原理是累積梯度。" and not qs[2].incomplete


def test_points_from_total_and_count_and_inline_points():
    paper = (
        "一、简答题（共2题，共20分）\n1.（12分）说明A。\n答案：A是…。\n2.说明B。\n答案：B是…。\n"
    )
    q1, q2 = parse(paper).questions
    assert (q1.points, q2.points) == (12, 8)  # what is left of 共20分 after question 1's 12
    assert q1.stem == "说明A。"


@pytest.mark.parametrize(
    ("header", "qtype"),
    [("案例分析题", T.CASE_STUDY), ("讨论题", T.DISCUSSION), ("論述題", T.DISCUSSION), ("问答题", T.SHORT_ANSWER),
     ("多項選擇題", T.MULTIPLE_CHOICE), ("填空題", T.FILL_BLANK), ("是非题", T.TRUE_FALSE)],
)  # fmt: skip
def test_header_variants(header, qtype):
    body = {
        T.MULTIPLE_CHOICE: "1.题A.一B.二答案：AB",
        T.FILL_BLANK: "1.题____答案：一",
        T.TRUE_FALSE: "1.题（√）",
    }.get(qtype, "1.题目。答案：参考答案。")
    (q,) = parse(f"一、{header}{body}").questions
    assert q.type is qtype


def test_case_study_numbering_ignores_lists_in_the_reference():
    paper = "五、案例分析题（共1题）\n案例1.某平台要做推荐。\n问题：设计架构。\n参考答案：\n1.数据层：收集。\n2.模型层：训练。\n3.评估层：AUC。"
    (q,) = parse(paper).questions
    assert q.type is T.CASE_STUDY and q.number == "案例1" and q.id == "p-s1-q1"
    assert "问题：设计架构。" in q.stem
    assert q.answer.startswith("1.数据层") and q.answer.endswith("3.评估层：AUC。")


def test_generic_choice_header_infers_single_or_multiple():
    paper = "一、选择题1.题一A.甲B.乙答案：A2.题二A.甲B.乙C.丙答案：AC"
    q1, q2 = parse(paper).questions
    assert (q1.type, q2.type) == (T.SINGLE_CHOICE, T.MULTIPLE_CHOICE)


def test_numbers_in_text_are_not_question_starts():
    paper = (
        "一、单项选择题1.global batch=2048，8节点×8卡，累加4步，则micro batch为A.4B.8C.16D.32答案：B"
        "解析：2048/(8×8×4)=8。2.PyTorch2.1中v2.0的API是A.1.3%B.5.8%答案：A解析：见2.1节。3.题三A.甲B.乙答案：B"
    )
    qs = parse(paper).questions
    assert [q.number for q in qs] == ["1", "2", "3"]
    assert qs[1].options == {"A": "1.3%", "B": "5.8%"}
    assert qs[0].explanation == "解析：2048/(8×8×4)=8。".removeprefix("解析：")


def test_option_letter_glued_to_a_word():
    paper = "一、单选题1.平均dropA.0.5%B.2%C.5%答案：C2.支持ExpertDropB.支持EP答案：A"
    q1, q2 = parse(paper).questions
    assert q1.stem == "平均drop" and q1.options == {"A": "0.5%", "B": "2%", "C": "5%"}
    # "ExpertDropB." is option B only because option A came first
    assert q2.options == {}


def test_pinyin_is_removed_everywhere():
    paper = "一、單項選(xuǎn)擇(zé)題1.訓(xùn)練A.甲(jiǎ)B.乙答案：A解析：因(yīn)為甲。"
    (q,) = parse(paper).questions
    assert q.section == "一、單項選擇題" and q.stem == "訓練" and q.options["A"] == "甲"
    assert q.explanation == "因為甲。"


@pytest.mark.parametrize(
    ("tail", "incomplete"),
    [
        ('答案：1)配置：```json{"zero_optimization":{"', True),
        ("答案：因为它们通", True),
        ("答案：可适当降低学习率，", True),
        ("答案：可适当降低学习率。", False),
        ("", True),  # no answer at all
    ],
)
def test_cut_off_last_question_is_kept_and_marked(tail, incomplete):
    paper = "一、简答题（每题10分）1.描述ZeRO-3。答案：分片。2.如何训练180B模型？" + tail
    result = parse(paper)
    q1, q2 = result.questions
    assert not q1.incomplete
    assert q2.incomplete is incomplete
    assert any("cut off" in w.message for w in result.report) is incomplete


def test_objective_last_question_with_answer_is_complete():
    (q,) = parse("一、单选题1.题A.甲B.乙答案：B").questions
    assert not q.incomplete


# --- malformed papers ------------------------------------------------------------------------


def test_empty_paper_is_an_error():
    with pytest.raises(BankError, match=r"paper.txt:1: the paper is empty"):
        parse("  \n\n")


def test_paper_without_questions_is_an_error():
    with pytest.raises(BankError, match="no section header"):
        parse("这只是一段说明文字，没有题目。")


def test_warnings_name_the_line_and_nothing_is_dropped():
    paper = """一、单选题（共3题）
这段文字不属于任何题目。
1.没有选项的选择题
答案：A
2.答案不是选项字母
A.甲
B.乙
答案：甲乙丙
3.选了不存在的选项
A.甲
B.乙
答案：E
二、判断题
"""
    result = parse(paper)
    assert [q.number for q in result.questions] == ["1", "2", "3"]  # all kept
    messages = [(w.line, w.message) for w in result.report]
    # the line of the ignored text itself, not of the header above it
    assert (2, "text before the first question ignored: '这段文字不属于任何题目。'") in messages
    assert any(line == 3 and "without options" in m for line, m in messages)
    assert any(line == 5 and "names no option letter" in m for line, m in messages)
    assert any(line == 9 and "missing option" in m for line, m in messages)
    assert any(line == 13 and "empty" in m for line, m in messages)


def test_instructions_before_the_questions_are_not_reported():
    paper = "一、判断题\n正确的打“√”，错误的打“×”。\n1.说法。（√）\n二、单选题\n请将答案填在括号内。\n1.题A.甲B.乙答案：A"
    result = parse(paper)
    assert len(result.questions) == 2
    assert not [e for e in result.report if e.problem == "ignored_text"]


def test_declared_count_mismatch_is_warned():
    result = parse("一、单选题（共3题）1.题A.甲B.乙答案：A2.题A.甲B.乙答案：B")
    assert any("declares 3 questions, found 2" in w.message for w in result.report)


def test_objective_question_without_answer_is_warned():
    result = parse("一、单选题1.题A.甲B.乙2.题A.甲B.乙答案：B")
    assert any("question 1" in w.message and "no answer key" in w.message for w in result.report)
