"""The review-queue benchmark counts the queue as production fills it (``benchmarks.lib.replay``):
the hard answers on top of the budget, every answer's large error in the denominator (rule
zeros included), and the best recall any ranking could reach; the seed sets' queue
(``benchmarks.lib.seed_queue``) is counted as the replay's."""

from __future__ import annotations

import pytest

from benchmarks.lib.replay import Answer, Scored, catch
from benchmarks.lib.seed_queue import queue
from grader.calibrate.scorer_rows import ScorerRow
from grader.engine.scoring.scorer_model import AnswerFeatures
from grader.models import Method, ReviewCode
from tests.unit.test_review_queue import grade


def answer(i: int, human: float, grade: float, hard: str | None = None, scored: bool = True):
    row = ScorerRow(id=f"a{i}", question="q", share=human, points=10, features=AnswerFeatures())
    record = Scored(0.5, {}, "default", [], []) if scored else None
    return Answer(row, 0, grade, hard, record)


def test_hard_answers_enter_beyond_the_budget_and_rule_zeros_count_as_errors():
    answers = [
        answer(0, 0.8, 0.0, hard="zero by rule", scored=False),  # off topic, 0: a large error
        answer(1, 0.6, 0.0, scored=False),  # a blank the course paid: large, never queued
        answer(2, 0.9, 0.2),  # the ranking's
        answer(3, 0.5, 0.6),
        *(answer(i, 0.5, 0.5) for i in range(4, 10)),
    ]
    by_error = {"errors": lambda a: a.error}
    cell = catch(answers, by_error, (0.1,))
    assert cell["large_errors"] == 3 and cell["hard"] == 1 and cell["hard_large_errors"] == 1
    # budget 1 of 10: the hard zero plus the largest ranked error, 2 of the 3 large errors
    assert cell["10%"]["errors"] == pytest.approx(2 / 3, abs=1e-3)
    assert cell["10%"]["best"] == pytest.approx(2 / 3, abs=1e-3)
    assert cell["10%"]["reviewed"] == pytest.approx(0.2)
    worst_first = {"wrong": lambda a: -a.error}
    assert catch(answers, worst_first, (0.1,))["10%"]["wrong"] == pytest.approx(1 / 3, abs=1e-3)


def test_the_seed_queue_counts_hard_answers_beyond_the_budget_against_random_and_best():
    # one question, six answers graded 5 of 10: the least sure is off by 5 (large), one
    # injection is off by 3 (large, hard), one sure answer is off by 3 (large, ranked low),
    # and a blank the rule scored 0 was worth 6 (large, never ranked)
    graded = [
        (grade("unsure", 0.1), 0.0),
        (grade("injected", 0.9, ReviewCode.SUSPECTED_INJECTION), 8.0),
        (grade("sure", 0.95), 8.0),
        (grade("a", 0.8), 5.0),
        (grade("b", 0.8), 5.5),
        (grade("blank", 1.0, ReviewCode.BLANK, method=Method.RULE, score=0.0, needs=False), 6.0),
    ]
    found = queue(graded)
    assert found["large_errors"] == 4 and found["hard"] == 1
    assert found["hard_reasons"] == {"suspected_injection": 1}
    at_20 = found["20%"]  # budget: 1 of 6, on top of the hard one: the least sure
    assert at_20["ranked"] == pytest.approx(2 / 4, abs=1e-3)
    assert at_20["random"] == pytest.approx(2 / 6 * 4 / 4, abs=1e-3)  # 2 of 6 reviewed
    assert at_20["best"] == pytest.approx(2 / 4, abs=1e-3)
    assert at_20["reviewed"] == pytest.approx(2 / 6, abs=1e-3)
