"""The review queue: a question's grades ranked by expected error, reviewed within a budget.

A queue that holds most answers points at none. So every model-scored grade gets an expected
error in points: a line over five signals its record already holds (``error_signals``): the
scorer's doubt (1 − its confidence, the chance it is within a quarter of the points), how far
its score sits from the nearest of its three nearest graded answers' scores and from their
mean, how far the two coverage signals disagree, and whether the copy rule decided it; fit on
out-of-fold development grades as production gives them (``benchmarks/review_queue.py
--fit``, which writes ``review_error.json``; the designs tried: ``benchmarks/
review_designs.py``). Where rules took points off the scorer's grade (withheld for want of
verification, deducted for a wrong claim: ``ruled_points``) and those are more, they are the
expected error: a reader that missed a paraphrase owes the student exactly them; not where the
rules read the answer against the rubric (``read_against``). Review is:

- every grade with a *hard* reason, one a person must settle whatever the ranking says
  (suspected injection, unscored, judge failure, an undecidable conclusion, …: any code that
  is not soft below);
- the top of the ranking, at most ``review_share`` of the question's answers.

Soft reasons (low confidence, the signals or the scorer disagreeing with the judge, nothing
verified, a wrong claim's deduction) explain the ranking, they are not flags of their own: they move into ``details.review``, and a
grade the budget picks carries one ``expected_error`` reason that names them.
``near_duplicate`` is an integrity matter, not a grading one: it leaves the queue (the
grade's signals still name the copies; ``grader integrity`` reports them).

A pure post-pass over one call's grades, run again over a service exam's stored grades of a
question as answers arrive (``service.store.review_rank``); applying it twice changes nothing.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from grader.engine.scoring.scorer_core.rules import COPY
from grader.models import Grade, GradeStatus, Method, ReviewCode, ReviewRanking, ReviewReason

SOFT = frozenset(
    {
        ReviewCode.LOW_CONFIDENCE,
        ReviewCode.SEMANTIC_DISAGREEMENT,
        ReviewCode.COVERAGE_DISAGREEMENT,
        ReviewCode.SCORER_DISAGREEMENT,
        ReviewCode.UNVERIFIED,
        ReviewCode.WRONG_CLAIM,
        ReviewCode.KEYWORDS_ONLY,
    }
)
INTEGRITY = frozenset({ReviewCode.NEAR_DUPLICATE})
RANKING = SOFT | INTEGRITY | {ReviewCode.EXPECTED_ERROR}  # codes this pass decides
# E|grade − human| as a share of the points = base + Σ weight · signal: least squares on
# out-of-fold development grades, ADS and Mohler dev, every graded-answer setting; written by
# ``python -m benchmarks.review_queue --fit`` (docs/research/benchmarks-log.md, "Expected error").
ERROR_MODEL = Path(__file__).with_name("review_error.json")
SIGNALS = ("doubt", "neighbour_gap", "coverage_gap", "mean_gap", "copy")
UNKNOWN_CONFIDENCE = 0.5  # a model grade without a confidence ranks in the middle


def load_error_model(path: Path = ERROR_MODEL) -> tuple[float, dict[str, float]]:
    """(base, weight per signal) of the shipped line; a file that misses a signal fails."""
    model = json.loads(path.read_text(encoding="utf-8"))
    return float(model["base"]), {name: float(model["weights"][name]) for name in SIGNALS}


ERROR_BASE, ERROR_WEIGHTS = load_error_model()


def error_signals_of(
    share: float,
    confidence: float | None,
    features: Mapping[str, Any],
    nearest_shares: Sequence[float],
    copied: bool = False,
) -> dict[str, float]:
    """The signals of the expected error, from a grade's share of the points, confidence,
    scorer features, its nearest graded answers' shares (nearest first, at most three, as
    the grade shows them; none without graded answers) and whether the copy rule decided it
    (a graded answer with its very text). The benchmark's fit calls this too.

    ``neighbour_gap`` is the distance to the nearest of the three scores, ``mean_gap`` to
    their mean: together (the second weighs negatively) they rank highest a grade between its
    neighbours' scores, far from each but near their mean (a 5 between a 0 and a 10), above
    one beyond them all on one side; a copy's grade is the instructor's own for the same text
    (a negative weight)."""
    sure = UNKNOWN_CONFIDENCE if confidence is None else confidence
    coverage = (features.get("semantic_coverage") or 0.0) - (features.get("ngram_coverage") or 0.0)
    near = nearest_shares[:3]
    return {
        "doubt": 1.0 - sure,
        "neighbour_gap": min((abs(share - s) for s in near), default=0.0),
        "coverage_gap": abs(coverage),
        "mean_gap": abs(share - sum(near) / len(near)) if near else 0.0,
        "copy": 1.0 if copied else 0.0,
    }


def error_signals(grade: Grade) -> dict[str, float]:
    """``error_signals_of`` read from the record: the scorer's explanation in ``details``
    (its features, its nearest graded answers with their scores). The one place this pass
    reads what scoring recorded."""
    points = grade.max_score or 1.0
    scorer = grade.details.scorer
    nearest = [min(1.0, n.score / points) for n in scorer.neighbours] if scorer else []
    features = scorer.features if scorer else {}
    copied = scorer is not None and scorer.decided_by == COPY
    share = (grade.score or 0.0) / points
    return error_signals_of(share, grade.confidence, features, nearest, copied)


def error_share(
    signals: Mapping[str, float],
    base: float = ERROR_BASE,
    weights: Mapping[str, float] | None = None,
) -> float:
    """The line: expected |grade − human| as a share of the points (never below 0)."""
    weights = ERROR_WEIGHTS if weights is None else weights
    return max(0.0, base + sum(w * signals[name] for name, w in weights.items()))


def expected_error(grade: Grade) -> float | None:
    """Expected distance to the instructor's grade, in points; None for a grade no model
    scored (exact, by rule, unscored): the ranking leaves it alone."""
    if grade.status != GradeStatus.GRADED or grade.method != Method.JUDGE or not grade.max_score:
        return None
    line = error_share(error_signals(grade)) * grade.max_score
    return round(max(line, *ruled_points(grade)), 2)


def ruled_points(grade: Grade) -> tuple[float, float]:
    """The points rules took off the scorer's grade that a reader could give back: those
    withheld for want of verification, and those a wrong claim's reading deducted. None
    where the rules read the answer against the rubric (a wrong claim asserted, a decisive
    part denied): that is no paraphrase they missed, and a fluent wrong answer, which the
    scorer rates as high as a right one, would otherwise head the queue at its right grade."""
    if read_against(grade):
        return 0.0, 0.0
    claims, substance = grade.details.claims, grade.details.substance
    withheld = claims.withheld if claims else 0.0
    deducted = sum(c.points for c in substance.claims if not c.negated) if substance else 0.0
    return withheld, deducted


def read_against(grade: Grade) -> bool:
    """Whether the rules read the answer asserting a wrong claim or denying a decisive part in
    so many words (a part merely opposed, "更新参数" against "!立即更新", most right answers
    also are)."""
    claims, substance = grade.details.claims, grade.details.substance
    wrong = substance is not None and any(not c.negated for c in substance.claims)
    return wrong or (claims is not None and any(p.denied for p in claims.parts))


def is_hard(grade: Grade) -> bool:
    """Flagged for a reason the ranking cannot weigh: a person always looks."""
    return grade.needs_review and any(r.code not in RANKING for r in grade.review_reasons)


def explanations(grade: Grade) -> list[ReviewReason]:
    """The soft reasons of a grade: in its reasons before this pass, in details after it."""
    ranking = grade.details.review
    found = list(ranking.explanations) if ranking else []
    found += [r for r in grade.review_reasons if r.code in SOFT]
    return list({(r.code, r.message): r for r in found}.values())


def budget(answers: int, share: float) -> int:
    """How many of a question's ``answers`` the ranking may send to review: at most
    ``share`` of them."""
    return math.floor(answers * share + 1e-9)


def rank_question(grades: Sequence[Grade], share: float) -> list[Grade]:
    """One question's grades (same order) with the budget applied: hard ones kept, the
    ``share`` with the largest expected error queued, every other soft flag lifted."""
    errors = [expected_error(g) for g in grades]
    order = sorted(
        (i for i, e in enumerate(errors) if e is not None), key=lambda i: -(errors[i] or 0.0)
    )
    rank = {i: n for n, i in enumerate(order, start=1)}
    picked = set([i for i in order if not is_hard(grades[i])][: budget(len(grades), share)])
    return [
        _queued(g, errors[i], rank.get(i), len(order), i in picked) for i, g in enumerate(grades)
    ]


def rank_grades(grades: Sequence[Grade], share: float) -> list[Grade]:
    """``rank_question`` per question over one call's grades; same order."""
    by_question: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(grades):
        by_question[g.question_id].append(i)
    out = list(grades)
    for members in by_question.values():
        ranked = rank_question([grades[i] for i in members], share)
        for i, g in zip(members, ranked, strict=True):
            out[i] = g
    return out


def queue_order(grades: Sequence[Grade]) -> list[Grade]:
    """The grades that need review, as an instructor should take them: hard reasons first,
    then by expected error, largest first."""
    return sorted(
        (g for g in grades if g.needs_review),
        key=lambda g: (not is_hard(g), -(recorded_error(g) or 0.0)),
    )


def unranked(grade: Grade) -> Grade:
    """The grade as scoring left it, before this pass: soft reasons back among its reasons,
    no ranking. What a re-score starts from, so that it re-decides the scorer's own reasons
    (``engine.finish.rescored``) instead of keeping stale ones; rank again afterwards."""
    if grade.details.review is None:
        return grade
    reasons = [r for r in grade.review_reasons if r.code != ReviewCode.EXPECTED_ERROR]
    reasons += [r for r in explanations(grade) if r not in reasons]
    details = grade.details.without("review")
    return grade.model_copy(
        update={"review_reasons": reasons, "needs_review": bool(reasons), "details": details}
    )


def recorded_error(grade: Grade) -> float | None:
    """The expected error this pass recorded on the grade (None before it ran, or for a grade
    no model scored)."""
    ranking = grade.details.review
    return ranking.expected_error if ranking else None


def _queued(
    grade: Grade, error: float | None, rank: int | None, ranked: int, picked: bool
) -> Grade:
    soft = explanations(grade)
    reasons = [r for r in grade.review_reasons if r.code not in RANKING]
    if picked:
        why = "; ".join(r.message for r in soft)
        reasons.append(
            ReviewReason(
                code=ReviewCode.EXPECTED_ERROR,
                message=f"expected error {error:g} of {grade.max_score:g} points, "
                f"rank {rank} of {ranked}" + (f" ({why})" if why else ""),
            )
        )
    needs = bool(reasons) if grade.needs_review or picked else False
    details = grade.details
    if error is not None or soft:
        ranking = ReviewRanking(
            expected_error=error, rank=rank, ranked=ranked, queued=needs, explanations=soft
        )
        details = details.model_copy(update={"review": ranking})
    return grade.model_copy(
        update={"review_reasons": reasons, "needs_review": needs, "details": details}
    )
