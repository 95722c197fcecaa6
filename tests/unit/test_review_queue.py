"""The review queue's budget: hard reasons always, the rest by expected error within a share."""

import pytest

from grader.engine.review.queue import (
    ERROR_BASE,
    ERROR_WEIGHTS,
    SIGNALS,
    budget,
    error_signals,
    expected_error,
    load_error_model,
    queue_order,
    rank_grades,
    unranked,
)
from grader.models import Grade, GradeStatus, Method, ReviewCode, ReviewReason


def grade(
    sid, confidence, *codes, qid="q1", needs=None, method=Method.JUDGE, score=5.0, scorer=None
):
    reasons = [ReviewReason(code=c, message=f"{c} of {sid}") for c in codes]
    graded = score is not None
    return Grade(
        details={} if scorer is None else {"scorer": scorer},
        submission_id=sid,
        question_id=qid,
        status=GradeStatus.GRADED if graded else GradeStatus.UNSCORED,
        score=score,
        max_score=10,
        method=method,
        confidence=confidence,
        needs_review=bool(reasons) if needs is None else needs,
        review_reasons=reasons,
    )


def queued(grades):
    return {g.submission_id for g in grades if g.needs_review}


def test_expected_error_is_in_points_and_falls_with_confidence():
    sure, unsure = grade("a", 0.9), grade("b", 0.3)
    # no graded neighbours, no coverage recorded: the doubt alone moves it
    doubt = ERROR_WEIGHTS["doubt"] * 0.1
    assert expected_error(sure) == pytest.approx(10 * (ERROR_BASE + doubt), abs=0.01)
    assert expected_error(unsure) > expected_error(sure)
    assert expected_error(grade("c", None, score=None, method=Method.NONE)) is None
    assert expected_error(grade("d", 1.0, method=Method.RULE, score=0.0)) is None


def test_budget_takes_the_largest_expected_errors_only():
    # ten answers, all flagged low_confidence today: the 20 % budget keeps the two least sure
    grades = [grade(f"s{i}", 0.05 * i + 0.1, ReviewCode.LOW_CONFIDENCE) for i in range(10)]
    ranked = rank_grades(grades, 0.2)
    assert queued(ranked) == {"s0", "s1"}
    assert [g.details.review.rank for g in ranked if g.details.review] == list(range(1, 11))
    top = ranked[0]
    assert [r.code for r in top.review_reasons] == [ReviewCode.EXPECTED_ERROR]
    assert "low_confidence of s0" in top.review_reasons[0].message  # the soft reason explains
    rest = ranked[5]
    assert not rest.needs_review and rest.review_reasons == []
    assert rest.details.review is not None
    assert rest.details.review.explanations[0].code == "low_confidence"


def test_budget_is_at_most_the_share_of_the_question():
    assert budget(10, 0.2) == 2 and budget(9, 0.2) == 1 and budget(4, 0.2) == 0
    grades = [grade(f"s{i}", 0.5) for i in range(9)]
    assert len(queued(rank_grades(grades, 0.2))) == 1
    assert queued(rank_grades(grades, 0.0)) == set()


def test_hard_reasons_are_always_kept_and_do_not_use_the_budget():
    grades = [grade(f"s{i}", 0.9) for i in range(10)]
    grades[7] = grade("s7", 0.99, ReviewCode.SUSPECTED_INJECTION, ReviewCode.LOW_CONFIDENCE)
    grades[8] = grade("s8", None, ReviewCode.JUDGE_FAILED, score=None, method=Method.NONE)
    grades[9] = grade("s9", 0.2)
    ranked = rank_grades(grades, 0.1)
    assert queued(ranked) == {"s7", "s8", "s9"}
    assert ReviewCode.SUSPECTED_INJECTION in {r.code for r in ranked[7].review_reasons}
    assert [g.submission_id for g in queue_order(ranked)] == ["s7", "s8", "s9"]


def test_near_duplicate_leaves_the_queue():
    grades = [grade(f"s{i}", 0.9) for i in range(5)]
    grades[0] = grade("s0", 0.95, ReviewCode.NEAR_DUPLICATE)
    ranked = rank_grades(grades, 0.0)
    assert queued(ranked) == set()
    assert ranked[0].review_reasons == []


def test_each_question_has_its_own_budget_and_the_pass_is_idempotent():
    grades = [grade(f"a{i}", 0.1 * i, qid="q1") for i in range(5)]
    grades += [grade(f"b{i}", 0.9, qid="q2") for i in range(5)]
    once = rank_grades(grades, 0.2)
    assert queued(once) == {"a0", "b0"}  # q2's sure answers still fill q2's one place
    assert rank_grades(once, 0.2) == once


def test_queue_order_ranks_by_expected_error():
    grades = [grade("x", 0.6), grade("y", 0.2), grade("z", 0.4)]
    ranked = rank_grades(grades, 1.0)
    assert [g.submission_id for g in queue_order(ranked)] == ["y", "z", "x"]


def test_grades_no_model_scored_are_left_alone():
    blank = grade("b", 1.0, ReviewCode.BLANK, needs=False, method=Method.RULE, score=0.0)
    exact = grade("e", 1.0, method=Method.EXACT, score=1.0)
    ranked = rank_grades([blank, exact], 1.0)
    assert ranked == [blank, exact]


def test_unranked_gives_back_the_grade_as_scoring_left_it():
    grades = [grade(f"s{i}", 0.1 * (i + 1), ReviewCode.LOW_CONFIDENCE) for i in range(5)]
    grades[0] = grade("s0", 0.1, ReviewCode.LOW_CONFIDENCE, ReviewCode.SUSPECTED_INJECTION)
    ranked = rank_grades(grades, 0.2)

    def seen(g):
        return g.needs_review, {(r.code, r.message) for r in g.review_reasons}, g.details

    assert [seen(unranked(g)) for g in ranked] == [seen(g) for g in grades]


def explained(semantic, ngram, *neighbour_scores):
    """A scorer explanation as ``engine.scoring.scorer_grade`` records it."""
    return {
        "version": None, "decided_by": "graded", "share": 0.5, "contributions": {}, "copies": [],
        "features": {"semantic_coverage": semantic, "ngram_coverage": ngram},
        "neighbours": [{"id": f"n{i}", "score": s, "similarity": 0.9} for i, s in enumerate(neighbour_scores)],
    }  # fmt: skip


def test_a_score_between_its_graded_neighbours_ranks_above_one_that_agrees_with_them():
    # equally confident: the safe grade sits on its nearest graded answers' scores, the risky one
    # between a zero and a full mark with its two coverage signals far apart
    safe = grade("safe", 0.6, score=8.0, scorer=explained(0.7, 0.65, 8.0, 8.0, 7.5))
    risky = grade("risky", 0.6, score=5.0, scorer=explained(0.8, 0.2, 0.0, 10.0, 0.0))
    assert error_signals(risky)["neighbour_gap"] == pytest.approx(0.5)
    assert error_signals(safe)["neighbour_gap"] == 0.0
    assert expected_error(risky) > expected_error(safe)
    ranked = rank_grades([safe, risky, *(grade(f"s{i}", 0.6, score=8.0) for i in range(3))], 0.2)
    assert queued(ranked) == {"risky"}


def test_a_grade_between_its_neighbours_ranks_above_one_beyond_them_and_a_copy_below():
    # both 5 of 10, both half the points from their nearest graded answer: one between a 0
    # and a 10 (near their mean), one below three 10s (far from their mean too)
    between = grade("between", 0.6, score=5.0, scorer=explained(0.5, 0.5, 0.0, 10.0, 0.0))
    beyond = grade("beyond", 0.6, score=5.0, scorer=explained(0.5, 0.5, 10.0, 10.0, 10.0))
    assert error_signals(between)["neighbour_gap"] == error_signals(beyond)["neighbour_gap"]
    assert error_signals(between)["mean_gap"] == pytest.approx(1 / 6, abs=1e-3)
    assert error_signals(beyond)["mean_gap"] == pytest.approx(0.5)
    assert expected_error(between) > expected_error(beyond)
    copied = explained(0.5, 0.5, 0.0, 10.0, 0.0) | {"decided_by": "copy"}
    copy = grade("copy", 0.6, score=5.0, scorer=copied)
    assert error_signals(copy)["copy"] == 1.0 and error_signals(between)["copy"] == 0.0
    assert expected_error(copy) < expected_error(between)


def test_the_expected_error_is_stored_in_the_record():
    graded = grade("a", 0.7, score=4.0, scorer=explained(0.5, 0.3, 6.0))
    stored = rank_grades([graded], 1.0)[0].details.review
    assert stored is not None
    assert stored.expected_error == expected_error(graded) > 0
    assert stored.rank == 1 and stored.ranked == 1


def test_the_shipped_line_weighs_each_signal_the_documented_way(tmp_path):
    # doubt, the gap to the nearest graded score and the coverage gap raise the expected error;
    # the gap to the neighbours' mean (given the nearest gap) and a copy's grade lower it
    assert set(ERROR_WEIGHTS) == set(SIGNALS)
    up = ("doubt", "neighbour_gap", "coverage_gap")
    assert all(ERROR_WEIGHTS[s] > 0 for s in up)
    assert ERROR_WEIGHTS["mean_gap"] < 0 and ERROR_WEIGHTS["copy"] < 0
    partial = tmp_path / "line.json"
    partial.write_text('{"base": 0.1, "weights": {"doubt": 0.4}}')
    with pytest.raises(KeyError):
        load_error_model(partial)


def test_points_withheld_from_an_answer_read_against_the_rubric_are_no_expected_error():
    """Withheld points rank a grade as a missed paraphrase would, unless the rules read the
    answer denying a decisive part or asserting a wrong claim: a fluent wrong answer the
    scorer rated high is then ranked by the line alone, not at the queue's head."""

    def withheld(status, wrong=False, denied=False):
        part = {"criterion": "C1", "claim": "c", "status": status, "evidence": "", "pays": 4.0}
        part["denied"] = denied
        claims = {"parts": [part], "verified": {"C1": 0.0}, "unverified_share": 0.3}
        found = {"criterion": "C1", "claim": "w", "sentence": "", "containment": 1.0}
        return Grade.model_validate({**grade("w", 0.9, score=0.0).model_dump(), "details": {
            "claims": {**claims, "withheld": 6.0},
            "substance": {
                "language": "zh", "content_share": 1.0, "reference_share": 1.0, "concrete": 0,
                "restated": False,
                "claims": [{**found, "negated": False, "points": 4.0}] if wrong else [],
            },
        }})  # fmt: skip

    missed, line = withheld("absent"), expected_error(grade("w", 0.9, score=0.0))
    assert expected_error(missed) == 6.0
    assert expected_error(withheld("negated", denied=True)) == line
    assert expected_error(withheld("negated")) == 6.0  # opposed only: right answers are too
    assert expected_error(withheld("absent", wrong=True)) == line
