"""The exam teaches the essay grader: its objective items as labelled claims, proposed for
the rubric of the essay question on the same topic, and added only where an instructor
accepts them."""

from __future__ import annotations

import difflib
import json
import shutil

from grader.bank.files import load_bank
from grader.engine.reading.claims.exam import propose, statements
from grader.engine.reading.rubrics import load_rubrics
from grader.models import Question, QuestionType
from tests.conftest import RUBRICS
from tests.unit.test_cli import invoke

BANK = RUBRICS / "grad_accum_engineer.yaml"


def item(kind: QuestionType, stem: str, answer, options=None) -> Question:
    return Question(id="x-q1", number="1", section="一", type=kind, stem=stem, answer=answer,
                    options=options or {}, points=1)  # fmt: skip


def test_items_become_labelled_statements():
    tf = item(QuestionType.TRUE_FALSE, "梯度累積可以降低模型訓練時的計算量。", False)
    assert statements(tf) == [("梯度累积可以降低模型训练时的计算量", False)]
    fill = item(QuestionType.FILL_BLANK, "大模型訓練中，梯度累積可以減少______。", "內存占用")
    assert statements(fill) == [("大模型训练中，梯度累积可以减少内存占用", True)]
    right = item(QuestionType.SINGLE_CHOICE, "以下關于梯度累積的說法，正確的是", "C",
                 {"A": "只能在CPU上使用", "C": "可以減少GPU內存壓力"})  # fmt: skip
    assert statements(right) == [("梯度累积只能在CPU上使用", False),
                                 ("梯度累积可以减少GPU内存压力", True)]  # fmt: skip
    wrong = item(QuestionType.SINGLE_CHOICE, "下列說法錯誤的是", "A",
                 {"A": "梯度累积能减少计算量", "B": "梯度累积能模拟大批次"})  # fmt: skip
    assert statements(wrong) == [("梯度累积能减少计算量", False), ("梯度累积能模拟大批次", True)]


def test_the_exams_false_statements_are_proposed_for_the_essay_on_its_topic():
    bank = load_bank(BANK)
    rubrics = load_rubrics(BANK, bank)
    found = propose(bank, bank.get("004-s5-q4"), rubrics["004-s5-q4"])
    assert found and not any(p.true for p in found)  # false ones, unless asked for the true
    false = {p.claim for p in found}
    every = propose(bank, bank.get("004-s5-q4"), rubrics["004-s5-q4"], with_true=True)
    assert {p.claim for p in every if not p.true} == false and any(p.true for p in every)
    assert "梯度累积可以降低模型训练时的计算量" in false  # 004-s4-q10, marked ✗
    assert "梯度累积步数增加，会导致内存需求减小" in false
    assert all(p.source.startswith("004-s") and p.topic >= 0.25 for p in found)
    memory = next(p for p in found if p.claim == "梯度累积步数增加，会导致内存需求减小")
    assert memory.criterion == "C5"  # the criterion on memory, time and communication


def test_accepting_a_proposal_adds_it_as_a_wrong_claim(tmp_path):
    bank = tmp_path / "grad_accum_engineer.yaml"
    shutil.copy(BANK, bank)
    shutil.copytree(RUBRICS / "grad_accum_engineer", tmp_path / "grad_accum_engineer")
    listed = invoke("rubric", "claims", bank, "004-s5-q4", "--json")
    assert listed.exit_code == 0, listed.output
    proposals = [p for p in json.loads(listed.stdout)]
    assert proposals and not any(p["true"] for p in proposals)  # only false ones by default
    number = 1 + [p["claim"] for p in proposals].index("梯度累积步数增加，会导致内存需求减小")
    before = (tmp_path / "grad_accum_engineer" / "004-s5-q4.yaml").read_text(encoding="utf-8")
    done = invoke("rubric", "claims", bank, "004-s5-q4", "--accept", str(number))
    assert done.exit_code == 0, done.output
    # the instructor's file keeps its form: the claim is added lines, nothing else rewritten
    written = (tmp_path / "grad_accum_engineer" / "004-s5-q4.yaml").read_text(encoding="utf-8")
    added = list(difflib.ndiff(before.splitlines(), written.splitlines()))
    assert not [line for line in added if line.startswith("- ")]
    assert [line for line in added if line.startswith("+ ")] == [
        "+       - claim: 梯度累积步数增加，会导致内存需求减小",
    ]
    after = load_rubrics(bank, load_bank(bank))["004-s5-q4"]
    c5 = next(c for c in after.criteria if c.id == "C5")
    assert c5.wrong_claims[-1].claim == "梯度累积步数增加，会导致内存需求减小"
    again = invoke("rubric", "claims", bank, "004-s5-q4", "--json")
    assert "梯度累积步数增加，会导致内存需求减小" not in again.stdout  # listed now


def test_a_bad_acceptance_is_refused_with_the_reason(tmp_path):
    for choice, said in (("99", "no proposal"), ("1:C9", "no criterion 'C9'")):
        refused = invoke("rubric", "claims", BANK, "004-s5-q1", "--accept", choice)
        assert refused.exit_code == 2 and said in refused.output
    assert invoke("rubric", "claims", BANK, "004-s1-q1").exit_code == 2  # not an essay
