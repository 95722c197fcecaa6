"""The refit page's sentence: which figure moved, which way, clearly or not, and whether to
apply; MAE decides."""

from grader.api.instructor.refit_advice import advise
from grader.calibrate.metrics import METRIC_LABELS, Agreement, Estimate


def agreement(**values) -> Agreement:
    """Figures with intervals of ±0.05 around each value (none for those given as None)."""
    figures = {"qwk": 0.5, "pearson": 0.6, "spearman": 0.6, "mae": 1.0, "exact": 0.3,
               "adjacent": 0.7, "mean_difference": 0.2, **values}  # fmt: skip
    return Agreement(
        n=40, max_score=5.0,
        **{k: Estimate(value=v, low=v - 0.05, high=v + 0.05) for k, v in figures.items()},
    )  # fmt: skip


def test_the_issues_refit_is_mixed_and_says_which_figures_disagree():
    before = agreement(qwk=0.59, exact=0.27, mae=0.9)
    after = agreement(qwk=0.52, exact=0.58, mae=0.6)
    advice = advise(before, after, METRIC_LABELS)
    assert advice.verdict == "mixed"
    assert advice.message.startswith("Mixed: MAE fell 0.90 → 0.60 (closer to your points) but "
                                     "QWK fell 0.59 → 0.52.")  # fmt: skip
    moved = {m.key: (m.better, m.clear) for m in advice.moves}
    assert moved["exact"] == (True, True) and moved["qwk"] == (False, True)
    assert moved["pearson"] == (None, False)


def test_apply_keep_and_nothing_moved():
    better = advise(agreement(), agreement(mae=0.7, exact=0.45, qwk=0.52), METRIC_LABELS)
    assert better.verdict == "apply"
    assert better.message == (
        "Apply it: MAE fell 1.00 → 0.70, clearly closer to your points, and no figure clearly "
        "worse; also exact rose 0.30 → 0.45."
    )
    worse = advise(agreement(), agreement(mae=1.3, exact=0.4), METRIC_LABELS)
    assert worse.verdict == "keep" and "although exact rose 0.30 → 0.40" in worse.message
    assert advise(agreement(), agreement(), METRIC_LABELS).verdict == "same"
    # judge − human: closer to 0 is better, whichever side
    lenient = advise(agreement(mean_difference=0.4), agreement(mean_difference=-0.1),
                     METRIC_LABELS)  # fmt: skip
    assert next(m for m in lenient.moves if m.key == "mean_difference").better is True
