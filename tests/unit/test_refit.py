"""The refit's parts on synthetic answers: held-out folds that never leak a question, the
band rule, the minimum, feature sets kept; and re-scoring a stored grade."""

import numpy as np
import pytest

import grader.calibrate.refit_cv as refit_cv
from grader.calibrate.refit import _verdict, refit
from grader.calibrate.refit_fit import refit_first_stage
from grader.calibrate.refit_rows import check_enough, refit_row
from grader.calibrate.tables import ScorePair
from grader.engine.finish.rescored import judged, rescored, stored_features
from grader.engine.scoring.scorer_core.pool import GradedPool
from grader.engine.scoring.scorer_model import AnswerFeatures, load_scorer
from grader.errors import CalibrationError
from grader.models import (
    CriterionScore,
    Grade,
    GradedAnswer,
    GradeDetails,
    GradeStatus,
    Method,
    ReviewCode,
    ReviewReason,
)

BASE = load_scorer("default")


def rows(questions=6, per=20, seed=0, texts=True):
    """Answers whose human share follows n-gram coverage (not what the default weighs most),
    with vectors that put answers of similar share near each other."""
    rng = np.random.default_rng(seed)
    out, vectors = [], {}
    for q in range(questions):
        centre = rng.normal(size=8)
        for a in range(per):
            ngram = rng.uniform()
            features = AnswerFeatures(
                reference_margin=rng.normal(0.1, 0.05),
                semantic_coverage=rng.uniform(),
                ngram_coverage=ngram,
                length_log_ratio=rng.normal(0, 0.5),
            )
            share = float(np.clip(0.1 + 0.8 * ngram + rng.normal(0, 0.05), 0, 1))
            rid = f"q{q}-a{a}"
            vector = centre + rng.normal(size=8) * 0.3 + 4 * share
            vectors[rid] = vector / np.linalg.norm(vector)
            current = round(BASE.score(features)[1] * 10) / 2
            pair = ScorePair(submission_id=rid, question_id=f"q{q}", max_score=5.0,
                             human=round(share * 10) / 2, judge=current,
                             answer=f"answer {rid}" if texts else None)  # fmt: skip
            out.append(refit_row(pair, features))
    return out, vectors


def test_no_answer_is_scored_by_a_first_stage_fit_on_its_question(monkeypatch):
    seen = []
    fit = refit_cv.refit_first_stage

    def recording(base, train):
        signals = fit(base, train)
        seen.append(({r.question for r in train}, signals))
        return signals

    monkeypatch.setattr(refit_cv, "refit_first_stage", recording)
    reads = []
    read = refit_cv.read_answers
    monkeypatch.setattr(
        refit_cv,
        "read_answers",
        lambda test, signals, vectors: (
            reads.append((test, signals)) or read(test, signals, vectors)
        ),
    )
    data, vectors = rows()
    found = refit_cv.out_of_fold(BASE, data, vectors, 5)
    assert found.folds == 5 and set(found.read) == {r.id for r in data}
    for test, signals in reads:  # outer and inner reads alike
        trained_on = next(q for q, s in seen if s is signals)
        assert not trained_on & {r.question for r in test}


def test_the_refit_learns_the_instructors_weights_and_reports_held_out_figures():
    data, vectors = rows()
    result = refit(BASE, data, vectors, bootstrap=100)
    before = result.comparison.before.overall
    after = result.comparison.after.overall
    assert before.n == after.n == len(data) and result.questions == 6
    assert after.mae.value < before.mae.value  # the grades as they are weigh the wrong signal
    assert after.mae.low is not None and after.mae.high is not None
    # the first stage these answers reach (no judge reading: not the judge's scorer)
    first = next(s for s in result.scorer.first_stage if s.name == "signals")
    weights = dict(zip(first.features, first.coef, strict=True))
    assert max(weights, key=lambda k: abs(weights[k])) == "ngram_coverage"
    assert result.scorer.version and result.base_version == BASE.version
    assert [b.min_graded for b in result.bands] == [b.min_graded for b in BASE.bands]
    assert result.neighbours


def test_without_vectors_the_bands_are_the_bases_and_the_report_says_so():
    data, _ = rows()
    result = refit(BASE, data, None, bootstrap=0)
    assert not result.neighbours
    assert [b.model_dump() for b in result.scorer.bands] == [
        b.model_dump() for b in BASE.bands
    ]  # same numbers, not refit
    assert any("no answer vectors" in n for n in result.notes)


def test_a_first_stage_whose_features_no_answer_has_is_kept():
    data, _ = rows()
    signals = refit_first_stage(BASE, data)
    assert [s.name for s in signals] == [s.name for s in BASE.first_stage]
    by_name = {s.name: (s, base) for s, base in zip(signals, BASE.first_stage, strict=True)}
    judged, base = by_name["judge+signals"]
    assert judged == base  # needs the judge's reading (and English): nobody has it
    refit_, base = by_name["signals"]
    assert refit_ != base and refit_.trained_on["answers"] == len(data)


def test_too_few_answers_or_questions_are_refused_with_the_minimum():
    data, _ = rows(questions=2, per=30)
    with pytest.raises(CalibrationError, match="at least 30 answers on at least 3 questions"):
        check_enough(data)
    data, _ = rows(questions=3, per=9)
    with pytest.raises(CalibrationError, match="27 answer"):
        check_enough(data)
    check_enough(rows(questions=3, per=10)[0])


def test_a_band_is_refit_only_with_enough_answers_and_a_lower_held_out_error():
    assert _verdict(29, 5, 0.1, 0.9)[0] == "base"
    assert _verdict(40, 2, 0.1, 0.9)[0] == "base"
    assert _verdict(40, 5, None, 0.9)[0] == "base"
    assert _verdict(40, 5, 0.9, 0.9)[0] == "base"
    assert _verdict(40, 5, 0.8, 0.9) == ("refit", "the refit lowers the held-out error")


def test_the_band_is_the_largest_one_reached():
    assert BASE.band(None) is None
    assert BASE.band(4) is None
    assert BASE.band(5).min_graded == 5 and BASE.band(19).min_graded == 10
    assert BASE.band(200).min_graded == 20


# --- re-scoring one stored grade -------------------------------------------------------------

FEATURES = {"reference_margin": 0.1, "semantic_coverage": 0.5, "ngram_coverage": 0.4,
            "length_log_ratio": 0.0, "cohort_reference_z": 0.2, "judge_share": 0.9,
            "judge_entropy": 0.3, "knn_share": 0.5, "graded_count": 7,
            "language": "en"}  # fmt: skip


def grade(copies=(), reasons=()):
    return Grade(
        submission_id="s1",
        question_id="q1",
        status=GradeStatus.GRADED,
        score=2.0,
        max_score=4,
        method=Method.JUDGE,
        criteria=[
            CriterionScore(id="C1", points=1, max_points=2, evidence="e1"),
            CriterionScore(id="C2", points=1, max_points=2, evidence="e2"),
        ],
        review_reasons=list(reasons),
        details={
            "judge_points": {"C1": 2.0, "C2": 1.6},
            "scorer": {
                "version": "old",
                "decided_by": "copy" if copies else "signals",
                "share": 0.5,
                "features": FEATURES,
                "contributions": {},
                "copies": list(copies),
                "neighbours": [],
            },
        },
        provenance={"rubric_version": "r1", "scorer_version": "old"},
    )


def test_a_stored_grade_keeps_its_own_features_not_its_neighbours():
    features = stored_features(grade())
    assert features.ngram_coverage == 0.4 and features.judge_share == 0.9
    assert features.language == "en"  # which of a scorer's models may serve it
    assert features.knn_share is None and features.graded_count is None


def test_rescoring_keeps_the_judges_points_and_reasons_and_replaces_the_scorers():
    disagree = ReviewReason(code=ReviewCode.SCORER_DISAGREEMENT, message="old")
    injection = ReviewReason(code=ReviewCode.SUSPECTED_INJECTION, message="judge's")
    before = grade(reasons=[disagree, injection])
    assert [c.points for c in judged(before).criteria] == [2.0, 1.6]
    new = rescored(before, BASE, 0.6)
    codes = [r.code for r in new.review_reasons]
    assert (
        codes.count(ReviewCode.SCORER_DISAGREEMENT) <= 1 and ReviewCode.SUSPECTED_INJECTION in codes
    )
    assert new.details.rescored_from.model_dump() == {"score": 2.0, "scorer_version": "old",
                                            "decided_by": "signals"}  # fmt: skip
    assert new.provenance.scorer_version == BASE.version
    assert new.details.judge_points == {"C1": 2.0, "C2": 1.6}
    assert new.details.scorer.features["language"] == "en"
    assert sum(c.points for c in new.criteria) == pytest.approx(new.score)
    again = rescored(new, BASE, 0.6)
    assert again.score == new.score and again.review_reasons == new.review_reasons


def test_recorded_copies_stand_unless_the_graded_answers_are_known():
    copied = grade(copies=[{"id": "h1", "score": 3.5}])
    assert rescored(copied, BASE, 0.6).score == 3.5  # a human score does not change
    empty = GradedPool.from_features(4, [], None, BASE)
    assert (
        rescored(copied, BASE, 0.6, answer="text", pool=empty).details.scorer.decided_by != "copy"
    )
    pool = GradedPool.from_features(
        4, [(GradedAnswer(id="h2", question_id="q1", answer="text", score=1.0),
             AnswerFeatures(**{k: v for k, v in FEATURES.items() if k in
                               ("reference_margin", "semantic_coverage", "ngram_coverage",
                                "length_log_ratio")}))],
        None, BASE,
    )  # fmt: skip
    now = rescored(copied, BASE, 0.6, answer="text", pool=pool)
    assert now.score == 1.0 and [c.model_dump() for c in now.details.scorer.copies] == [
        {"id": "h2", "score": 1.0}
    ]


def test_a_grade_no_scorer_decided_is_not_rescored():
    plain = grade().model_copy(update={"details": GradeDetails()})
    assert rescored(plain, BASE, 0.6) is None
    unscored = grade().model_copy(update={"status": GradeStatus.UNSCORED, "score": None})
    assert rescored(unscored, BASE, 0.6) is None


def test_a_refit_row_carries_both_scores_and_a_default_fit_row_is_refused():
    row = rows(questions=1, per=1)[0][0]
    assert (row.human_points(), row.current_points()) == (row.human, row.current)
    with pytest.raises(ValueError, match="instructor's score"):
        row.model_copy(update={"human": None}).human_points()
    with pytest.raises(ValueError, match="current grade"):
        row.model_copy(update={"current": None}).current_points()
