"""The stage-2 designs the ADS bars were tried with (``benchmarks.graded_designs``) compute
what their names say, the queue signals that read every graded mark
(``benchmarks.review_designs``) rank a grade between two clusters of marks highest, and the
seed sets' queue figures (``benchmarks.seed_grade_first``) count as the replay's do."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.graded_designs import Block, e5_gp, graph, isotonic, kernel_ridge, linear_map
from benchmarks.review_designs import _between_modes, _graded_gap
from benchmarks.review_replay import Answer, Scored
from benchmarks.seed_grade_first import queue
from grader.calibrate.scorer_rows import ScorerRow
from grader.engine.scoring.scorer_model import AnswerFeatures
from grader.models import Method, ReviewCode
from tests.unit.test_review_queue import grade


def row(i: int) -> ScorerRow:
    return ScorerRow(id=f"a{i}", question="q", share=0.5, points=10, features=AnswerFeatures())


def block(sims: np.ndarray, graded_base, graded_share, rest_base) -> Block:
    n = len(graded_base)
    return Block(
        graded=[row(i) for i in range(n)],
        rest=[row(n + i) for i in range(len(rest_base))],
        graded_base=np.array(graded_base, dtype=float),
        graded_share=np.array(graded_share, dtype=float),
        rest_base=np.array(rest_base, dtype=float),
        sims=sims,
        shipped=np.zeros(len(rest_base)),
        copied=np.zeros(len(rest_base), dtype=bool),
        language="zh",
    )


def two_groups() -> np.ndarray:
    """Answers 0, 2 (graded) and 4 (not) alike; 1, 3 (graded) and 5 (not) alike."""
    group = np.array([0, 1, 0, 1, 0, 1])
    return np.where(group[:, None] == group[None, :], 0.98, 0.80)


def test_kernel_ridge_interpolates_its_targets_as_the_ridge_vanishes():
    k = np.array([[1.0, 0.3], [0.3, 1.0]])
    y = np.array([0.2, 0.8])
    assert kernel_ridge(k, k, y, 1e-9) == pytest.approx(y, abs=1e-6)
    assert kernel_ridge(k, k, y, 1e9) == pytest.approx([0.5, 0.5], abs=1e-6)  # the mean


@pytest.mark.parametrize("design", [e5_gp(0.05, 0.03), graph(2, 1.0)])
def test_residual_designs_carry_each_groups_residual_to_its_members(design):
    # group 0's graded answers sit 0.3 above the first stage, group 1's 0.3 below
    b = block(two_groups(), [0.5] * 4, [0.8, 0.2, 0.8, 0.2], [0.5, 0.5])
    got = design(b)
    assert got[0] > 0.6 and got[1] < 0.4


def test_the_linear_map_shrinks_its_slope_towards_one():
    b = block(two_groups(), [0.4, 0.6, 0.4, 0.6], [0.0, 1.0, 0.0, 1.0], [0.5, 0.7])
    free = linear_map(b, b.rest_base, 0.0)  # slope 5 through the graded answers
    assert free == pytest.approx([0.5, 1.5])
    shrunk = linear_map(b, b.rest_base, 1e6)
    assert shrunk == pytest.approx([0.5, 0.7], abs=1e-3)  # slope 1 around their means
    assert isotonic(b) == pytest.approx([0.5, 1.0])  # monotone, clipped to the graded range


def graded_answer(share: float, marks: list[float]) -> Answer:
    return Answer(row(0), 0, share, None, Scored(0.5, {}, "default", marks[:3], [], marks))


def test_a_grade_between_two_clusters_of_marks_ranks_above_one_inside_a_cluster():
    marks = [0.0, 0.0, 1.0, 1.0]
    between, inside = graded_answer(0.5, marks), graded_answer(1.0, marks)
    assert _between_modes(between) == pytest.approx(0.5) and _between_modes(inside) == 0.0
    assert _graded_gap(between) == pytest.approx(0.5) == _graded_gap(inside)


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
