"""The scorer's pure parts: neighbour features, fitting, prediction, explanation, the file."""

import json

import numpy as np
import pytest

from grader.calibrate.scorer_fit import fit_isotonic, fit_ridge
from grader.engine.scoring.scorer_core.rules import graded_split
from grader.engine.scoring.scorer_model import (
    AnswerFeatures,
    Scorer,
    ScorerSet,
    contributions,
    from_json,
    neighbour_features,
    predict,
    to_json,
)


def test_neighbours_weight_the_nearest_by_softmax():
    sims = np.array([0.80, 0.95, 0.90])
    shares = np.array([0.0, 1.0, 0.5])
    one = neighbour_features(sims, shares, k=1)
    assert one["knn_share"] == 1.0 and one["knn_top_similarity"] == 0.95
    assert one["knn_spread"] == 0.0 and one["graded_count"] == 3
    assert one["knn_residual"] is None  # no signals shares given
    three = neighbour_features(sims, shares, k=3, temperature=0.02)
    # 0.95 outweighs 0.90 by e^2.5 and 0.80 by e^7.5: close to 1, above a plain mean of 0.5
    assert 0.9 < three["knn_share"] < 1.0
    assert three["graded_mean"] == pytest.approx(0.5)
    flat = neighbour_features(sims, shares, k=3, temperature=1e9)
    assert flat["knn_share"] == pytest.approx(0.5)
    assert flat["knn_spread"] == pytest.approx(np.std(shares))


def test_residuals_say_how_far_the_marks_sit_from_the_signals():
    sims = np.array([0.95, 0.90, 0.70])
    shares = np.array([0.8, 0.6, 0.0])
    base = np.array([0.5, 0.5, 0.5])
    found = neighbour_features(sims, shares, base, k=1)
    assert found["knn_residual"] == pytest.approx(0.3)  # the nearest was marked 0.3 above
    assert found["graded_residual"] == pytest.approx((0.3 + 0.1 - 0.5) / 3)
    with pytest.raises(ValueError, match="first-stage share"):
        neighbour_features(sims, shares, base[:2])


def test_no_graded_answer_gives_no_neighbour_features():
    empty = neighbour_features(np.array([]), np.array([]))
    assert set(empty.values()) == {None}
    with pytest.raises(ValueError, match="same length"):
        neighbour_features(np.array([0.9]), np.array([0.1, 0.2]))


def test_identical_texts_are_copies_not_neighbours_and_an_answer_is_neither_to_itself():
    near, same = graded_split(
        "a",
        "栈是先进后出",
        ["a", "b", "c", "d"],
        ["栈是先进后出", "栈是先进后出", "队列是先进先出", "栈后进先出"],
    )
    assert near.tolist() == [False, False, True, True]
    assert same.tolist() == [False, True, False, False]


def _toy(n=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    y = np.clip(0.5 + 0.2 * x[:, 0] - 0.1 * x[:, 1] + rng.normal(scale=0.02, size=n), 0, 1)
    return x, y


def test_ridge_recovers_a_linear_rule_and_explains_it():
    x, y = _toy()
    scorer = fit_ridge(x, y, ["semantic_coverage", "length_log_ratio"])
    assert np.corrcoef(predict(scorer, x), y)[0, 1] > 0.98
    answer = AnswerFeatures(semantic_coverage=x[0, 0], length_log_ratio=x[0, 1])
    pushes = contributions(scorer, answer)
    assert pushes["semantic_coverage"] * x[0, 0] > 0  # more coverage, more points
    raw = scorer.intercept + sum(pushes.values())
    assert predict(scorer, x[:1])[0] == pytest.approx(np.clip(raw, 0, 1))


def test_isotonic_is_monotone_and_clipped():
    x = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    y = np.array([0.0, 0.3, 0.2, 0.8, 1.0])
    scorer = fit_isotonic(x, y, "reference_margin")
    out = predict(scorer, np.array([[-1.0], [0.25], [0.45], [9.0]]))
    assert np.all(np.diff(out) >= 0) and out[0] == 0.0 and out[-1] == 1.0


def _scorer_set(x, y):
    signals = fit_ridge(x, y, ["semantic_coverage", "topic_margin"])
    signals.name = "signals"
    fallback = fit_isotonic(x[:, 0], y, "semantic_coverage")
    fallback.name = "coverage only"
    few, many = (fit_ridge(x, y, ["base_share", "knn_residual"]) for _ in range(2))
    few.name, few.min_graded = "graded5+", 5
    many.name, many.min_graded = "graded10+", 10
    many.coef = [c * 2 for c in many.coef]
    return ScorerSet(first_stage=[signals, fallback], bands=[many, few])


def test_scorer_file_round_trip_version_and_stages():
    x, y = _toy()
    text = to_json(_scorer_set(x, y))
    again = from_json(text)
    assert to_json(again) == text  # a refit on the same data gives the same bytes
    assert again.version == json.loads(text)["version"] and len(again.version) == 12

    plain = AnswerFeatures(semantic_coverage=0.2, topic_margin=0.05)
    assert again.score(plain)[0] == "signals"
    assert again.score(AnswerFeatures(semantic_coverage=0.2))[0] == "coverage only"
    base = again.base(plain)[1]
    for count, chosen in ((3, "signals"), (5, "graded5+"), (9, "graded5+"), (40, "graded10+")):
        graded = plain.model_copy(update={"knn_residual": 0.1, "graded_count": count})
        name, share = again.score(graded)
        assert name == chosen
        if chosen != "signals":
            scorer = next(g for g in again.bands if g.name == chosen)
            assert share == pytest.approx(predict(scorer, np.array([[base, 0.1]]))[0])
    with pytest.raises(ValueError, match="no first-stage scorer"):
        again.score(AnswerFeatures(knn_residual=0.1, graded_count=40))


def test_a_scorer_for_some_languages_serves_only_those():
    x, y = _toy()
    english = fit_ridge(x, y, ["semantic_coverage", "topic_margin"])
    english = english.model_copy(update={"name": "english", "languages": ["en"]})
    every = fit_isotonic(x[:, 0], y, "semantic_coverage").model_copy(update={"name": "every"})
    scorers = from_json(to_json(ScorerSet(first_stage=[english, every])))
    answer = AnswerFeatures(semantic_coverage=0.2, topic_margin=0.05)
    assert scorers.base(answer.model_copy(update={"language": "en"}))[0] == "english"
    assert scorers.base(answer.model_copy(update={"language": "zh"}))[0] == "every"
    assert scorers.base(answer)[0] == "every"  # an answer of unknown language
    with pytest.raises(ValueError, match="languages"):
        Scorer.model_validate({**english.model_dump(by_alias=True), "languages": ["fr"]})


def test_stages_are_kept_apart():
    x, y = _toy()
    leaky = fit_ridge(x, y, ["semantic_coverage", "knn_share"])
    with pytest.raises(ValueError, match="uses knn_share"):
        ScorerSet(first_stage=[leaky])
    graded = fit_ridge(x, y, ["base_share", "knn_residual"])
    with pytest.raises(ValueError, match="min_graded"):
        ScorerSet(first_stage=[fit_isotonic(x[:, 0], y, "semantic_coverage")], bands=[graded])


def test_the_file_keeps_its_keys_for_the_stages():
    """``first_stage`` and ``bands`` are written and read as the file's ``signals`` and
    ``graded``, so every scorer file written before them reads the same."""
    x, y = _toy()
    first = fit_isotonic(x[:, 0], y, "semantic_coverage")
    band = fit_ridge(x, y, ["base_share", "knn_residual"]).model_copy(update={"min_graded": 5})
    payload = json.loads(to_json(ScorerSet(first_stage=[first], bands=[band])))
    assert set(payload) == {"signals", "graded", "confidence", "version"}
    read = from_json(json.dumps(payload))  # the file's numbers are rounded: compare the rest
    assert [(s.kind, s.features) for s in read.first_stage] == [("isotonic", first.features)]
    assert [(s.min_graded, s.features) for s in read.bands] == [(5, band.features)]
    assert set(read.model_dump()) == set(payload)  # any dump speaks the file's keys


def test_an_edited_or_wrong_file_fails_clearly():
    x, y = _toy()
    text = to_json(ScorerSet(first_stage=[fit_ridge(x, y, ["topic_margin", "ngram_coverage"])]))
    payload = json.loads(text)
    payload["signals"][0]["coef"][0] += 1
    with pytest.raises(ValueError, match="version does not match"):
        from_json(json.dumps(payload), "scorer.json")
    payload["signals"][0]["coef"] = [1.0]
    with pytest.raises(ValueError, match="one value per feature"):
        from_json(json.dumps(payload))
    payload["signals"][0]["features"] = ["shoe_size", "ngram_coverage"]
    with pytest.raises(ValueError, match="unknown features"):
        from_json(json.dumps(payload))
    with pytest.raises(ValueError, match="not JSON"):
        from_json("{", "scorer.json")
