"""The three seed papers import with the expected counts and every objective answer captured.

The answer keys below were typed from the papers by hand, independently of the importer.
"""

import json
import re
from collections import Counter

import pytest

from grader.bank.files import import_papers, load_bank
from tests.conftest import RUBRICS, SEED_BANKS

EXPECTED_COUNTS = {
    "000_c6a4a222620dd943.txt": {"single_choice": 30, "multiple_choice": 10, "true_false": 10, "short_answer": 1},
    "001_90443b3f2f8725e0.txt": {"single_choice": 15, "multiple_choice": 10, "fill_blank": 15, "true_false": 10, "case_study": 1},
    "004_06153bb6e740fef5.txt": {"fill_blank": 10, "single_choice": 10, "multiple_choice": 10, "true_false": 10, "short_answer": 4, "discussion": 2},
}  # fmt: skip

T, F = True, False
KEYS = {
    "000_c6a4a222620dd943.txt": {
        "single_choice": list("ABABCCBCDABCCBCBCBCCCCBBABACCB"),
        "multiple_choice": ["BCD", "BD", "ACD", "ABC", "ACD", "ABCD", "AB", "ABC", "AC", "ACD"],
        "true_false": [T, F, F, T, T, T, F, F, T, T],
    },
    "001_90443b3f2f8725e0.txt": {
        "single_choice": list("DDCBDDCADCDBBDC"),
        "multiple_choice": ["AB", "ADE", "ABD", "ABCD", "ABCDE", "ABCD", "ABC", "AB", "ADE", "ABCDE"],
        "fill_blank": ["水平劃分", "低秩近似", "在線學習", "梯度裁剪", "模型量化", "模型", "INT8", "邊緣計算",
                       "軟標簽", "INT8", "神經元", "稀疏", "準確率", "隱私保護", "GPT"],
        "true_false": [F, F, F, F, F, F, F, F, T, T],
    },
    "004_06153bb6e740fef5.txt": {
        "fill_blank": ["批次大小", "梯度", "累加", "學習率", "backward()", "內存限制", "梯度緩存", "內存占用",
                       "累積梯度", "4"],
        "single_choice": list("CCBBBBCCAC"),
        "multiple_choice": ["AB", "ABC", "ABCD", "ABCD", "ABC", "ACD", "ABC", "ABD", "ABC", "ABC"],
        "true_false": [F, F, F, F, T, F, F, T, F, F],
    },
}  # fmt: skip

INCOMPLETE = {
    "000_c6a4a222620dd943.txt": ["000-s4-q51"],
    "001_90443b3f2f8725e0.txt": ["001-s5-q1"],
    "004_06153bb6e740fef5.txt": ["004-s6-q2"],
}

PINYIN = re.compile(r"[āáǎàēéěèīíǐìōóǒòūúǔùǖǘǚǜ]")


@pytest.fixture(scope="module", params=sorted(SEED_BANKS))
def imported(request, seeds_dir):
    paper = request.param
    bank, warnings = import_papers([seeds_dir / paper], SEED_BANKS[paper])
    return paper, bank, warnings


def test_counts(imported):
    paper, bank, _ = imported
    assert Counter(q.type.value for q in bank.questions) == EXPECTED_COUNTS[paper]


def test_every_objective_answer_is_captured(imported):
    paper, bank, _ = imported
    for qtype, key in KEYS[paper].items():
        got = [q.answer for q in bank.questions if q.type == qtype]
        assert got == key, qtype
        if qtype.endswith("choice"):
            for q in bank.questions:
                if q.type == qtype:
                    assert set(q.answer) <= set(q.options), q.id
                    assert len(q.options) >= 4, q.id


def test_no_pinyin_survives_in_any_field(imported):
    _, bank, _ = imported
    blob = json.dumps(bank.model_dump(mode="json"), ensure_ascii=False)
    assert not PINYIN.findall(blob)


def test_truncated_questions_are_kept_and_marked(imported):
    paper, bank, warnings = imported
    assert [q.id for q in bank.questions if q.incomplete] == INCOMPLETE[paper]
    (last,) = [q for q in bank.questions if q.incomplete]
    assert last.answer  # whatever reference text exists is kept
    assert any("cut off" in w.message for w in warnings)


def test_ids_unique_and_numbers_as_printed(imported):
    _, bank, _ = imported
    assert len({q.id for q in bank.questions}) == len(bank.questions)
    assert all(q.number and q.section for q in bank.questions)


def test_committed_bank_matches_a_fresh_import(imported):
    paper, bank, _ = imported
    committed = load_bank(RUBRICS / f"{SEED_BANKS[paper]}.yaml")
    assert committed == bank


def test_explanations_are_kept(imported):
    paper, bank, _ = imported
    with_explanation = [q for q in bank.questions if q.explanation]
    expected = {
        "000_c6a4a222620dd943.txt": 50,
        "001_90443b3f2f8725e0.txt": 35,
        "004_06153bb6e740fef5.txt": 0,
    }
    assert len(with_explanation) == expected[paper]
