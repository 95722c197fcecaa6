"""Parts of the importer on their own: text preparation, numbering, collected lists, points."""

import pytest

from grader.bank.collected import numbered_entries, table_entries
from grader.bank.numbering import first_marker, scan
from grader.bank.paper import parse_paper
from grader.bank.points import SectionRule, share_total, subquestion_points
from grader.bank.source import normalise


def parse(text):
    return parse_paper(text, file="paper.txt", slug="p")


def test_page_furniture_becomes_empty_lines_and_line_numbers_stay():
    text = "期末试卷\n1.题\n第 1 页 共 8 页\n- 2 -\n期末试卷\n3/8\n得分\t评卷人\n…………密…………封…………线…………\n2.题"
    assert normalise(text).split("\n") == ["期末试卷", "1.题", "", "", "", "", "", "", "2.题"]


def test_a_traditional_page_footer_is_furniture_too():
    text = "期中試卷\n1.題\n第2頁 共2頁\n共 3 頁，第 1 頁\n2.題"
    assert normalise(text).split("\n") == ["期中試卷", "1.題", "", "", "2.題"]


def test_odd_spaces_and_full_width_letters_are_made_plain():
    assert normalise("Ａ．ｄｅｆ\u3000Ｂ．class\u00a0\tＣ．１") == "A．def B．class  C．1"


def test_a_stem_may_start_with_a_year_but_not_with_a_decimal():
    text = "1.2018年发生了什么？答案：见2.1节。2.第二题"
    markers = scan(text, first_marker(text, 0, len(text)), len(text))
    assert [text[m.start : m.start + 3] for m in markers] == ["1.2", "2.第"]


def test_reference_list_items_are_not_questions_unless_followed_by_an_answer():
    text = "1.简述A。答案：1.甲 2.乙 3.丙\n2.简述B。答案：乙\n3.简述C。"
    markers = scan(text, first_marker(text, 0, len(text)), len(text))
    assert [text[m.start : m.start + 4] for m in markers] == ["1.简述", "2.简述", "3.简述"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.B 2.C 3.A", {1: "B", 2: "C", 3: "A"}),
        ("1.B；2.C；3.A", {1: "B", 2: "C", 3: "A"}),
        ("1)B 2)C", {1: "B", 2: "C"}),
        ("1-3 BCA", {1: "B", 2: "C", 3: "A"}),
        ("1～3：√ × √", {1: "√", 2: "×", 3: "√"}),
        ("1.答：甲（1）乙（2）丙\n2.丁", {1: "答：甲（1）乙（2）丙", 2: "丁"}),
        ("（1）梯度（2）学习率", {1: "梯度", 2: "学习率"}),
        ("1.见2-3天的记录 2.B", {1: "见2-3天的记录", 2: "B"}),  # 2-3 is not a range here
    ],
)
def test_numbered_entries(text, expected):
    entries = numbered_entries(text, 0, len(text), 1)
    assert {n: t for n, (t, _) in entries.items()} == expected


def test_answer_table_rows():
    text = "题号 1 2 3\n答案 B C √\n题号 4 5\n答案 A D"
    assert {n: t for n, (t, _) in table_entries(text, 0, len(text)).items()} == {
        1: "B",
        2: "C",
        3: "√",
        4: "A",
        5: "D",
    }


def test_section_rules_and_sharing_a_total():
    rule = SectionRule.parse("（本大题共4小题，每空2分，共20分）")
    assert (rule.each, rule.per_blank, rule.total, rule.count) == (None, 2, 20, 4)
    assert share_total(SectionRule(total=20, count=4), [5, None, None, None]) == [5, 5, 5, 5]
    # a cut-off section: the missing questions keep their share
    assert share_total(SectionRule(total=40, count=4), [None]) == [10]


def test_subquestion_points_in_every_style():
    assert subquestion_points("（1）甲（3分）（2）乙（4分）") == [3, 4]
    assert subquestion_points("①甲（3分）②乙") == [3, None]
    assert subquestion_points("问题：\n1.甲（5分）\n2.乙（5分）", numbered_lists=True) == [5, 5]
    assert subquestion_points("问题1：甲（6分）问题2：乙（4分）", numbered_lists=True) == [6, 4]


def test_reference_with_scoring_standard_and_case_questions_numbered_as_problems():
    paper = (
        "一、案例分析题（共10分）\n案例：某公司要上云。\n问题1：选择服务模式。（6分）\n"
        "问题2：说明迁移风险。（4分）\n参考答案及评分标准：1.IaaS（6分）2.数据丢失（4分）"
    )
    (q,) = parse(paper).questions
    assert q.points == 10 and q.answer.startswith("1.IaaS")
    assert "参考答案" not in q.stem and "问题2：说明迁移风险" in q.stem


def test_end_part_referenced_by_a_bare_type_word():
    paper = (
        "一、单项选择题（每题1分）\n1.甲\nA.一 B.二\n2.乙\nA.一 B.二\n"
        "二、判断题（每题1分）\n1.丙\n2.丁\n参考答案\n选择题：1-2 AB\n判断题：1.√ 2.×"
    )
    result = parse(paper)
    assert [q.answer for q in result.questions] == ["A", "B", True, False]
    assert not result.report


def test_a_one_question_section_that_says_this_question_is_worth_10_gives_it_10():
    paper = "一、单项选择题（每题2分）\n1.甲\nA.一 B.二\n答案：A\n五、简答题（本题10分）\n2.简述梯度下降。\n答案：沿负梯度更新。"
    result = parse(paper)
    assert [q.points for q in result.questions] == [2, 10]
    assert not [e for e in result.report if e.problem == "no_points"]


def test_an_unnumbered_case_after_question_15_is_16_not_a_second_question_1():
    choices = "".join(f"{n}.第{n}题\nA.一 B.二\n答案：A\n" for n in range(1, 16))
    paper = f"一、单项选择题（每题2分）\n{choices}二、案例分析题（20分）\n案例：某公司要上云。\n问题：选择服务模式。\n参考答案：IaaS。"
    questions = parse(paper).questions
    assert [q.number for q in questions][-2:] == ["15", "16"]
    assert len({q.number for q in questions}) == len(questions)
