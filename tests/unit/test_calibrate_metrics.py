"""Every agreement figure against an independent computation on small hand-made tables."""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from grader.calibrate.metrics import agreement, to_labels

# Eight answers on a 0–5 scale, scored by hand.
HUMAN = [0, 1, 2, 3, 4, 5, 5, 2]
JUDGE = [0, 2, 2, 3, 3, 5, 4, 4]


def qwk_from_formula(h, j, k):
    """Cohen's weighted kappa from its definition: 1 − Σ w·O / Σ w·E, w = (i−j)²."""
    observed = np.zeros((k, k))
    for a, b in zip(h, j, strict=True):
        observed[a, b] += 1
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / len(h)
    i, jj = np.indices((k, k))
    weights = (i - jj) ** 2
    return 1 - (weights * observed).sum() / (weights * expected).sum()


def pearson_from_formula(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    dx, dy = x - x.mean(), y - y.mean()
    return (dx * dy).sum() / math.sqrt((dx**2).sum() * (dy**2).sum())


def test_every_figure_on_a_hand_made_table():
    result = agreement(HUMAN, JUDGE, 5, bootstrap=0)
    assert result.n == 8
    # differences judge − human: 0 1 0 0 −1 0 −1 2
    assert result.mae.value == pytest.approx(5 / 8)
    assert result.exact.value == pytest.approx(4 / 8)
    assert result.adjacent.value == pytest.approx(7 / 8)
    assert result.mean_difference.value == pytest.approx(1 / 8)
    assert result.qwk.value == pytest.approx(qwk_from_formula(HUMAN, JUDGE, 6))
    assert result.pearson.value == pytest.approx(pearson_from_formula(HUMAN, JUDGE))
    # Ranks with ties averaged, written out by hand.
    human_ranks = [1, 2, 3.5, 5, 6, 7.5, 7.5, 3.5]
    judge_ranks = [1, 2.5, 2.5, 4.5, 4.5, 8, 6.5, 6.5]
    assert result.spearman.value == pytest.approx(pearson_from_formula(human_ranks, judge_ranks))
    assert result.notes == []
    assert result.qwk.low is None  # no bootstrap asked for


def test_qwk_uses_the_whole_scale_not_only_observed_scores():
    # Only 0, 2 and 5 occur: kappa must weigh 0 vs 5 as five points apart, not two labels.
    h, j = [0, 2, 5, 5, 2], [2, 2, 5, 0, 5]
    result = agreement(h, j, 5, bootstrap=0)
    assert result.qwk.value == pytest.approx(qwk_from_formula(h, j, 6))
    assert result.qwk.value != pytest.approx(cohen_kappa_score(h, j, weights="quadratic"))


def test_fractional_scores_round_half_up_for_kappa_only():
    assert to_labels([0.5, 1.5, 2.5, 2.49, 4.75]).tolist() == [1, 2, 3, 2, 5]
    h, j = [2.5, 1.0, 4.5, 0.0], [2.5, 1.5, 4.0, 0.5]
    result = agreement(h, j, 5, bootstrap=0)
    assert result.qwk.value == pytest.approx(qwk_from_formula([3, 1, 5, 0], [3, 2, 4, 1], 6))
    assert result.exact.value == pytest.approx(1 / 4)  # exact compares the raw scores
    assert result.mae.value == pytest.approx((0 + 0.5 + 0.5 + 0.5) / 4)


def test_all_scores_equal_on_both_sides():
    result = agreement([3, 3, 3, 3], [3, 3, 3, 3], 5)
    assert result.qwk.value is None and result.pearson.value is None
    assert result.spearman.value is None
    assert result.mae.value == 0 and result.exact.value == 1 and result.adjacent.value == 1
    assert any("kappa undefined" in n for n in result.notes)
    assert any("both graders give every answer the same score" in n for n in result.notes)


def test_one_side_constant_has_kappa_but_no_correlation():
    result = agreement([3, 3, 3, 3], [1, 2, 3, 4], 5, bootstrap=0)
    assert result.pearson.value is None and result.spearman.value is None
    assert any("the instructor gives every answer the same score" in n for n in result.notes)
    # Constant human scores: no covariance, so kappa is exactly 0 (chance agreement).
    assert result.qwk.value == pytest.approx(qwk_from_formula([3] * 4, [1, 2, 3, 4], 6))
    assert result.qwk.value == pytest.approx(0)


def test_one_answer():
    result = agreement([4], [2], 5)
    assert result.n == 1
    assert result.qwk.value is None and result.pearson.value is None
    assert result.mae.value == 2 and result.exact.value == 0 and result.mean_difference.value == -2
    assert result.mae.low is None  # no interval from one answer
    assert any("one answer" in n for n in result.notes)


def test_no_answers():
    result = agreement([], [], 5)
    assert result.n == 0
    assert all(
        getattr(result, k).value is None
        for k in ("qwk", "pearson", "spearman", "mae", "exact", "adjacent", "mean_difference")
    )
    assert result.notes == ["no answer scored by both"]


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="same length"):
        agreement([1, 2], [1], 5)


def test_bootstrap_intervals_match_a_plain_resampling_loop():
    """The vectorized replicates equal scikit-learn / SciPy called once per resample."""
    rng = np.random.default_rng(7)
    h = rng.integers(0, 6, 15).astype(float)
    j = np.clip(h + rng.integers(-2, 3, 15), 0, 5)
    resamples, seed = 300, 11
    result = agreement(h, j, 5, bootstrap=resamples, seed=seed)

    rows = np.random.default_rng(seed).integers(0, 15, size=(resamples, 15))
    loops = {"qwk": [], "pearson": [], "spearman": [], "mae": [], "exact": []}
    for r in rows:
        hh, jj = h[r], j[r]
        if np.ptp(hh) and np.ptp(jj):
            loops["pearson"].append(stats.pearsonr(hh, jj).statistic)
            loops["spearman"].append(stats.spearmanr(hh, jj).statistic)
        if np.ptp(hh) or np.ptp(jj) or hh[0] != jj[0]:
            loops["qwk"].append(
                cohen_kappa_score(
                    hh.astype(int), jj.astype(int), labels=range(6), weights="quadratic"
                )
            )
        loops["mae"].append(np.abs(hh - jj).mean())
        loops["exact"].append((hh == jj).mean())
    for name, values in loops.items():
        low, high = np.quantile(values, [0.025, 0.975])
        estimate = getattr(result, name)
        assert estimate.low == pytest.approx(low), name
        assert estimate.high == pytest.approx(high), name
        assert estimate.low <= estimate.value <= estimate.high, name


def test_bootstrap_is_reproducible_and_seeded():
    a = agreement(HUMAN, JUDGE, 5, bootstrap=200, seed=1)
    b = agreement(HUMAN, JUDGE, 5, bootstrap=200, seed=1)
    c = agreement(HUMAN, JUDGE, 5, bootstrap=200, seed=2)
    assert a == b
    assert (a.mae.low, a.mae.high) != (c.mae.low, c.mae.high) or (
        a.qwk.low,
        a.qwk.high,
    ) != (c.qwk.low, c.qwk.high)


def test_perfect_agreement_has_degenerate_but_honest_intervals():
    result = agreement([0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5], 5, bootstrap=200)
    assert result.qwk.value == pytest.approx(1)
    assert (result.exact.low, result.exact.high) == (1, 1)
    assert result.qwk.low == pytest.approx(1) and result.qwk.high == pytest.approx(1)
