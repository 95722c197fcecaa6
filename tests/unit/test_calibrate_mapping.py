"""Isotonic score mapping: never worse on its own sample, inside the scale, applied honestly."""

import json

import numpy as np
import pytest

from grader.calibrate import (
    ScorePair,
    apply_mapping,
    cross_validate,
    fit_mapping,
    load_mapping,
    save_mapping,
)
from grader.calibrate.mapping import scale_step
from grader.errors import CalibrationError
from grader.models import Grade, GradeStatus, Method


def pairs(question, human, judge, max_score=5.0):
    return [
        ScorePair(
            submission_id=f"{question}-{i}",
            question_id=question,
            max_score=max_score,
            human=h,
            judge=j,
        )
        for i, (h, j) in enumerate(zip(human, judge, strict=True))
    ]


# A judge two points too lenient on q1, ranking answers right but for one swap.
LENIENT = pairs("q1", [0, 1, 1, 2, 3, 3, 2, 1, 3, 0], [2, 3, 3, 4, 5, 5, 4, 3, 4, 2])


def test_mapping_is_never_worse_on_its_own_sample_and_stays_in_range():
    rng = np.random.default_rng(3)
    human = rng.integers(0, 6, 40).astype(float)
    judge = np.clip(human + rng.normal(1.5, 1.2, 40), 0, 5)
    sample = pairs("q1", human, judge)
    mapping = fit_mapping(sample).questions["q1"]
    mapping.step = 0  # compare the fit itself, before rounding to the instructor's scale
    mapped = mapping.map(judge)
    assert np.mean((mapped - human) ** 2) <= np.mean((judge - human) ** 2)
    assert all(np.diff(mapped[np.argsort(judge)]) >= 0)  # monotone: the judge's ranking is kept
    far = mapping.map([-3, 0, 2.5, 5, 99])
    assert far.min() >= 0 and far.max() <= 5


def test_mapping_moves_a_lenient_judge_onto_the_instructor_scale():
    mapping = fit_mapping(LENIENT).questions["q1"]
    assert mapping.step == 1  # the instructor gives whole points
    assert mapping.map([2, 3, 5]).tolist() == [0, 1, 3]
    assert mapping.map([4]).tolist() == [2]  # {2, 2, 3}: mean 2.33, rounded to whole points


def test_scale_step():
    assert scale_step([0, 1, 5]) == 1
    assert scale_step([0, 1.5, 5]) == 0.5
    assert scale_step([0.25, 1]) == 0


def test_too_few_answers_are_not_mapped():
    mapping = fit_mapping(LENIENT + pairs("q2", [1, 2], [3, 4]))
    assert list(mapping.questions) == ["q1"]
    assert "2 answer(s)" in mapping.skipped["q2"]


def test_cross_validation_reports_raw_and_mapped_on_held_out_answers():
    checks = cross_validate(LENIENT + pairs("q2", [1, 2], [3, 4]), folds=5, seed=0)
    overall, q1, q2 = checks
    assert overall.question_id is None and overall.raw.n == 12
    assert q1.question_id == "q1" and q1.mapped and q1.folds == 5
    assert q1.raw.mae.value == pytest.approx(1.9)
    assert q1.with_mapping.mae.value < q1.raw.mae.value  # a constant offset is learnable
    assert not q2.mapped and q2.with_mapping == q2.raw
    assert overall.raw.qwk.low is None  # no bootstrap inside cross-validation


def graded(sid, qid, score, max_score=5.0):
    return Grade(
        submission_id=sid,
        question_id=qid,
        status=GradeStatus.GRADED,
        score=score,
        max_score=max_score,
        method=Method.JUDGE,
        details={"coverage_points": 1.0},
    )


def test_apply_keeps_the_raw_score_and_records_the_mapping(tmp_path):
    mapping = fit_mapping(LENIENT)
    path = tmp_path / "mapping.json"
    save_mapping(mapping, path)
    loaded = load_mapping(path)
    assert loaded == mapping and loaded.version == mapping.version
    unscored = Grade(
        submission_id="u", question_id="q1", status=GradeStatus.UNSCORED, score=None,
        max_score=5, method=Method.JUDGE,
    )  # fmt: skip
    out = apply_mapping([graded("a", "q1", 5), graded("b", "q9", 4), unscored], loaded, "m.json")
    assert out[0].score == 3
    assert out[0].details.model_dump(exclude={"trail"}) == {"coverage_points": 1.0, "raw_score": 5}
    assert [(e.step, e.before, e.after) for e in out[0].trail] == [("mapping", 5, 3)]
    assert out[0].provenance.score_mapping is not None
    assert out[0].provenance.score_mapping.version == mapping.version
    assert out[1] == graded("b", "q9", 4)  # no mapping for q9: unchanged
    assert out[2] == unscored
    with pytest.raises(CalibrationError, match="already mapped"):
        apply_mapping(out[:1], loaded, "m.json")
    with pytest.raises(CalibrationError, match="out of 10 points"):
        apply_mapping([graded("c", "q1", 5, max_score=10)], loaded, "m.json")


def test_load_mapping_errors_name_the_file(tmp_path):
    path = tmp_path / "m.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(CalibrationError, match=r"m\.json:1: invalid JSON"):
        load_mapping(path)
    path.write_text(json.dumps({"questions": {"q1": {"question_id": "q1"}}}), encoding="utf-8")
    with pytest.raises(CalibrationError, match=r"m.json: questions.q1.max_score"):
        load_mapping(path)


def test_questions_the_mapping_makes_worse_keep_the_judge_scores():
    # q3: the judge is already exact; a mean fit on a skewed question would pull 5s down to 4.
    exact = pairs("q3", [5, 5, 5, 5, 5, 5, 5, 5, 0, 5], [5, 5, 5, 5, 5, 5, 5, 5, 0, 0])
    checks = cross_validate(LENIENT + exact, folds=5, seed=0)
    by_id = {c.question_id: c for c in checks}
    assert by_id["q3"].with_mapping.mae.value > by_id["q3"].raw.mae.value
    mapping = fit_mapping(LENIENT + exact, checks=checks)
    assert list(mapping.questions) == ["q1"]
    assert "cross-validated MAE worse" in mapping.skipped["q3"]
