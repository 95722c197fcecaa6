"""Review flags: copies need shared wording, confidence ranks the likely errors first."""

import numpy as np
import pytest

from grader.calibrate.scorer_fit import fit_confidence, fit_ridge
from grader.engine.scoring.confidence import (
    caught,
    confidence,
    review_threshold,
    uncertainty_signals,
)
from grader.engine.scoring.scorer_model import AnswerFeatures
from grader.engine.signals.copies import containment, is_copy, jaccard

QUESTION = "栈底元素是不能删除的元素，这种说法对吗？为什么？"
ORIGINAL = "不正确，当栈里只有一个元素时，栈底元素就是栈顶元素，这时它可以被删除。"
LIGHT_EDIT = "不正确。当栈中只有一个元素时，栈底元素就是栈顶元素，这时它就可以被删除。"
OWN_WORDS = "错误 栈底元素可删除，只要它上面的元素都已出栈，它就成了栈顶，也能出栈。"


def test_a_light_edit_is_a_copy_and_other_wording_is_not():
    # Both pairs sit above the cosine threshold; only the wording tells them apart.
    assert is_copy(0.99, ORIGINAL, LIGHT_EDIT, QUESTION)
    assert not is_copy(0.973, ORIGINAL, OWN_WORDS, QUESTION)
    assert not is_copy(0.96, ORIGINAL, LIGHT_EDIT, QUESTION)  # cosine still required


def test_short_answers_are_never_copies():
    assert not is_copy(0.999, "2的n-1次方", "2的(n-1)次方")


def test_an_answer_that_extends_another_keeps_high_containment():
    longer = ORIGINAL + "栈是先进后出的线性表，只能在栈顶插入和删除，所以要先删除上面的元素。"
    assert containment(ORIGINAL, longer) > 0.9
    assert jaccard(ORIGINAL, longer) < 0.6  # why containment, not Jaccard, decides


def test_restating_the_question_is_not_shared_wording():
    a = "有n个节点并且高度为n的二叉树的个数是1。"
    b = "有n个节点并且高度为n的二叉树的个数是2的n-1次方。"
    question = "有n个节点并且高度为n的二叉树的个数是多少？"
    assert containment(a, b) > 0.7
    assert containment(a, b, question) < 0.5
    assert not is_copy(0.99, a, b, question)


def test_uncertainty_signals_without_and_with_neighbours():
    x = np.array([[0.1, 0.5], [0.3, 0.7], [0.5, 0.2], [0.2, 0.4]])
    scorer = fit_ridge(x, np.array([0.2, 0.6, 0.4, 0.3]), ["semantic_coverage", "ngram_coverage"])
    plain = AnswerFeatures(semantic_coverage=0.9, ngram_coverage=0.2)
    found = uncertainty_signals(0.5, plain, scorer)
    assert found["middle"] == 0.25 and found["coverage_gap"] == pytest.approx(0.7)
    assert found["novelty"] > 3  # 0.9 coverage is far outside what the scorer saw
    assert found["knn_spread"] is None and found["distance"] is None
    graded = plain.model_copy(
        update={
            "knn_share": 0.9,
            "knn_spread": 0.1,
            "knn_residual": -0.2,
            "knn_top_similarity": 0.95,
        }
    )
    found = uncertainty_signals(0.5, graded, scorer)
    assert found["neighbour_gap"] == pytest.approx(0.4)
    assert found["correction"] == pytest.approx(0.2)
    assert found["distance"] == pytest.approx(0.05)


def test_confidence_puts_the_likely_errors_under_review_first():
    rng = np.random.default_rng(0)
    doubt = rng.uniform(size=(400, 1))
    wrong = rng.uniform(size=400) < doubt[:, 0] ** 2  # more doubt, more errors
    model = fit_confidence(doubt, ~wrong, ["knn_spread"])
    scores = confidence(model, doubt)
    assert model.coef[0] < 0  # doubt lowers confidence
    rate = 0.2
    assert caught(wrong, -scores, rate) > 2 * rate  # far better than random review
    threshold = review_threshold(scores, rate)
    assert np.mean(scores < threshold) == pytest.approx(rate, abs=0.01)
    with pytest.raises(ValueError, match="between 0 and 1"):
        review_threshold(scores, 1.5)
    assert np.isnan(caught(np.zeros(5, dtype=bool), np.arange(5.0), 0.2))
