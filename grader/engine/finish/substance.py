"""Answers that say nothing checkable, and answers that assert a known misconception.

Topic similarity is not content: an answer that restates the question ("梯度累积
步数的选择会对模型训练产生影响……所以要选择合适的步数") sits near the reference, and the scorer
paid such answers half the points. Three lexical checks on the final grade, after the scorer:

- **Restated question.** An answer's content is its character 3-grams less the question
  stem's own and those of a few filler phrases ("具体情况具体分析", "选择合适的"). A Chinese
  answer earns no key point when it names nothing concrete beyond the stem (no number,
  formula, identifier or Latin term the stem lacks), under ``MAX_REFERENCE_SHARE`` of its
  content is the reference's or the key points' wording, and its content is under
  ``MIN_CONTENT_SHARE`` of its 3-grams — for an answer of at least ``MIN_GRAMS`` 3-grams; a
  shorter one only under ``MIN_SHORT_SHARE`` (short right answers repeat the stem too: "否。
  只有在n个元素连续进栈后……"). Such a grade is capped at ``CAP_SHARE`` of the points and goes
  to review. English answers are not checked: on the Mohler development half the measure
  capped 35 answers, 22 of them worth half the points or more (short right answers reuse the
  stem's words). Thresholds: docs/research/benchmarks-log.md, "Injections bind, restatements capped".
- **Bare keywords.** An answer that only lists the rubric's terms ("梯度累加 / 不立即更新 /
  …", ``claims.listing``) asserts nothing of them: capped as a restated question is.
- **Wrong claims.** A criterion may list known wrong claims (``Criterion.wrong_claims``), read
  by ``finish.wrong_claims`` (its patterns, else its wording). An asserted claim takes its
  points (all its criterion's by default), never below 0: a deduction, like the rubric's
  penalties, because one wrong statement costs what the rubric says it costs whatever else the
  answer has. They come off the whole grade unless the answer is a right one with one slip
  (``SLIP_VERIFIED_SHARE`` of its points verified, no decisive part denied, one claim): then
  off the claim's criterion first and the other criteria's unverified points after, so its
  verified points elsewhere stand (development: fluent wrong answers 0–45 % verified but one at
  80 %, mixed ones 60–90 %). A grade that still keeps
  over ``GENEROUS_SHARE`` of the points on under ``MISTAKEN_VERIFIED_SHARE`` of them verified,
  or that asserts ``MISTAKES`` listed wrong claims or more, goes to a person
  (``thinly_verified``, hard).

The decision, with its evidence, goes to ``details.substance``; ``reapply`` applies a
recorded decision again to a rescored grade (the text of the question is not needed).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from grader.engine.finish.context import Finishing
from grader.engine.finish.wrong_claims import wrong_claims
from grader.engine.reading.claims.listing import keyword_list
from grader.engine.reading.claims.parts import verified_by_rules
from grader.engine.scoring.points import STEP, allocate
from grader.engine.signals.copies import char_ngrams
from grader.models import (
    CriterionScore,
    FoundClaim,
    Grade,
    GradeStatus,
    Method,
    Question,
    ReviewCode,
    ReviewReason,
    Rubric,
    Substance,
    TrailStep,
)
from grader.text import language_of

# Chosen on development data (the seed sets, the ADS development part), with
# ``benchmarks/injection_binding.py``.
MIN_CONTENT_SHARE = 0.7
MIN_GRAMS = 30
MIN_SHORT_SHARE = 0.25
MAX_REFERENCE_SHARE = 0.2
CAP_SHARE = 0.1  # of the points, rounded down to half points
# More than this share of the points is generous for an answer worth nothing: given on readings
# that disagree or on little verified, a person decides whatever the ranking says (also
# ``finish.verified``'s line).
GENEROUS_SHARE = 0.3
# A generous grade that asserts a listed wrong claim on less than this share of its points
# verified goes to a person: the true things beside a misconception may be all the answer has.
MISTAKEN_VERIFIED_SHARE = 0.5
# A generous grade that asserts this many listed wrong claims goes to a person however much was
# verified: an answer confused twice over is no right answer with a slip, and the true things
# it states (definitions, premises) verify its criteria as a right answer's would.
MISTAKES = 2
# A right answer with one slip: this share of its points verified (where ``finish.verified``
# trusts an answer fully) and no decisive part denied. Its listed wrong claim then costs the
# claim's criterion, not its verified points elsewhere. At half the points, fluent wrong
# answers whose rules over-read their true-sounding sentences (held-out `hold16-021`, 3 of 5
# verified, worth 0) kept 3 points.
SLIP_VERIFIED_SHARE = 0.7
_CONCRETE = re.compile(r"[a-z0-9_]+")

FILLER = (
    *("具体情况具体分析", "具体问题具体分析", "视情况而定", "因情况而异", "根据实际情况"),
    *("根据具体情况", "需要综合考虑", "选择合适的", "合适的", "非常重要", "很重要", "产生影响"),
    *("效果更好", "训练得更好", "需要根据", "来确定", "所以要", "因为", "因此", "总之", "一般来说"),
)  # Chinese only: English answers are not checked (see above)
_FILLER_NGRAMS = frozenset().union(*(char_ngrams(f) for f in FILLER))
_FEEDBACK = {
    "restated": {
        "zh": "答案只复述了题目或泛泛而谈（如“具体情况具体分析”），没有可评分的要点。",
        "en": "The answer only restates the question or says nothing checkable, so it earns "
        "no key point.",
    },
    "claim": {"zh": "答案包含错误说法：{}。", "en": "The answer asserts a misconception: {}."},
    "keywords": {
        "zh": "答案只罗列了术语，没有说明它们之间的关系或原理，无法得分。",
        "en": "The answer only lists terms without saying anything about them.",
    },
}


def assess(
    answer: str, question: Question, rubric: Rubric, claims: Sequence[FoundClaim] | None = None
) -> Substance:
    """The answer's content beyond the stem, what of it is the reference's, and its wrong
    claims (``claims``: as the finishing context read them once; else read here)."""
    stem = char_ngrams(question.stem)
    grams = char_ngrams(answer)
    content = grams - stem - _FILLER_NGRAMS
    share = len(content) / len(grams) if grams else 0.0
    hits = len(content & (char_ngrams(_reference(question, rubric)) - stem))
    reference = hits / len(content) if content else 0.0
    asked = question.stem.casefold()
    concrete = sum(t not in asked for t in _CONCRETE.findall(answer.casefold()))
    restated = (
        language_of(answer) == "zh"
        and concrete == 0
        and reference < MAX_REFERENCE_SHARE
        and share < (MIN_CONTENT_SHARE if len(grams) >= MIN_GRAMS else MIN_SHORT_SHARE)
    )
    return Substance(
        language="en" if question.language == "en" else "zh",
        content_share=round(share, 4),
        reference_share=round(reference, 4),
        concrete=concrete,
        restated=restated,
        keywords_only=keyword_list(answer, rubric),
        claims=wrong_claims(answer, rubric, stem) if claims is None else list(claims),
    )


def substance_step(grade: Grade, context: Finishing) -> Grade:
    """The finishing step: a model's grade checked for substance (a rule's 0 is left as it
    is), on the answer when its question is known, else by the decision the grade recorded."""
    if grade.method == Method.RULE or context.rubric is None:
        return grade
    if context.question is not None and context.answer is not None:
        claims = context.wrong_claims
        new = checked(grade, context.answer, context.question, context.rubric, claims)
    else:
        new = reapply(grade, context.rubric)
    found = new.details.substance
    if new.score == grade.score or found is None:
        return new
    why, evidence = [], []
    if found.restated:
        why.append(f"only restates the question: capped at {CAP_SHARE:.0%} of the points")
    if found.keywords_only:
        why.append(f"only lists the rubric's terms: capped at {CAP_SHARE:.0%} of the points")
    for claim in found.claims:
        if not claim.negated:
            why.append(f"asserts a known wrong claim ({claim.claim}): −{claim.points:g}")
            evidence.append(claim.sentence)
    return new.moved(TrailStep.SUBSTANCE, grade.score, "; ".join(why), evidence)


def checked(
    grade: Grade,
    answer: str,
    question: Question,
    rubric: Rubric,
    claims: Sequence[FoundClaim] | None = None,
) -> Grade:
    """The final grade with the restatement cap and the wrong claims' deductions applied."""
    return bound(grade, assess(answer, question, rubric, claims), answer, rubric)


def bound(grade: Grade, substance: Substance, answer: str, rubric: Rubric) -> Grade:
    """``grade`` with the substance rules applied: capped for a restated question, less the
    points of each asserted wrong claim, to review with the reasons and a feedback line.
    Applying it twice changes nothing more."""
    if grade.status != GradeStatus.GRADED or grade.score is None or not substance.fired:
        return grade
    slip = _after_slip(substance, grade, rubric.points)
    taken = (
        None
        if slip is None
        else sum(c.points for c in grade.criteria) - sum(c.points for c in slip)
    )
    score = capped(grade.score, rubric.points, substance, taken)
    criteria = grade.criteria
    if score < grade.score:
        criteria = allocate(slip or grade.criteria, rubric, score, answer, grade)
    reasons, lines = list(grade.review_reasons), []
    codes = {r.code for r in reasons}
    if substance.restated and ReviewCode.RESTATED_QUESTION not in codes:
        reasons.append(_restated_reason(substance))
        lines.append(_FEEDBACK["restated"][substance.language])
    if substance.keywords_only and ReviewCode.KEYWORDS_ONLY not in codes:
        reasons.append(
            ReviewReason(
                code=ReviewCode.KEYWORDS_ONLY,
                message=f"only a list of the rubric's terms, nothing said of them: capped at "
                f"{CAP_SHARE:.0%} of the points",
            )
        )
        lines.append(_FEEDBACK["keywords"][substance.language])
    for claim in substance.claims:
        if not claim.negated and ReviewCode.WRONG_CLAIM not in codes:
            reasons.append(
                ReviewReason(
                    code=ReviewCode.WRONG_CLAIM,
                    message=f"{claim.criterion}: asserts {claim.claim!r} ({claim.sentence!r}), "
                    f"−{claim.points:g}",
                )
            )
            lines.append(_FEEDBACK["claim"][substance.language].format(claim.claim))
    if (
        _mistaken_and_thin(grade, substance, score, rubric)
        and ReviewCode.THINLY_VERIFIED not in codes
    ):
        reasons.append(_mistaken_reason(grade, substance, score, rubric))
    # a re-scored grade's feedback already holds these lines: written once, first
    kept = [x for x in grade.feedback.split("\n") if x not in lines] if grade.feedback else []
    feedback = "\n".join([*lines, *kept]) or None
    return grade.model_copy(
        update={
            "score": score,
            "criteria": criteria,
            "feedback": feedback,
            "needs_review": True,
            "review_reasons": reasons,
            "details": grade.details.model_copy(update={"substance": substance}),
        }
    )


def capped(score: float, points: float, substance: Substance, taken: float | None = None) -> float:
    """The score after the cap and the deductions, in half points, never below 0; ``taken``:
    what a right answer's one slip took from its criteria (``_after_slip``), else the claims'
    points come off the whole score."""
    if substance.restated or substance.keywords_only:
        score = min(score, math.floor(CAP_SHARE * points / STEP) * STEP)
    if taken is None:
        taken = sum(c.points for c in substance.claims if not c.negated)
    return max(0.0, math.floor((score - taken) / STEP + 1e-9) * STEP) if taken else score


def _after_slip(substance: Substance, grade: Grade, points: float) -> list[CriterionScore] | None:
    """The criteria of a right answer with one slip once its wrong claims are taken: from the
    claim's own criterion first, as the rubric's penalties are, then from the other criteria's
    unverified points, so its verified points elsewhere stand. None where the claims come off
    the whole grade: under ``SLIP_VERIFIED_SHARE`` of the points verified (the true things
    beside them may be all the answer has), a decisive part denied, or ``MISTAKES`` claims."""
    check = grade.details.claims
    owed: dict[str, float] = {}
    for claim in substance.claims:
        if not claim.negated:
            owed[claim.criterion] = owed.get(claim.criterion, 0.0) + claim.points
    if (
        not owed
        or check is None
        or not check.parts
        or not grade.criteria
        or len(_asserted(substance)) >= MISTAKES
        or sum(check.verified.values()) < SLIP_VERIFIED_SHARE * points
        or any(part.denied for part in check.parts)
    ):
        return None
    held = {c.id: c.points for c in grade.criteria}
    left = sum(max(0.0, p - held.get(k, 0.0)) for k, p in owed.items())
    spare = {
        c.id: max(0.0, c.points - check.verified.get(c.id, 0.0))
        for c in grade.criteria
        if c.id not in owed
    }
    share = min(1.0, left / sum(spare.values())) if sum(spare.values()) > 0 else 0.0
    return [
        c.model_copy(
            update={
                "points": max(0.0, c.points - owed[c.id])
                if c.id in owed
                else c.points - spare[c.id] * share
            }
        )
        for c in grade.criteria
    ]


def reapply(grade: Grade, rubric: Rubric) -> Grade:
    """A rescored grade with the substance decision its first grading recorded."""
    recorded = grade.details.substance
    if recorded is None:
        return grade
    return bound(grade, recorded, "", rubric)


def _mistaken_and_thin(grade: Grade, substance: Substance, score: float, rubric: Rubric) -> bool:
    """Whether the answer asserts a listed wrong claim, keeps over ``GENEROUS_SHARE`` of the
    points and had under ``MISTAKEN_VERIFIED_SHARE`` of them verified (``details.claims``) or
    asserts ``MISTAKES`` wrong claims or more."""
    check = grade.details.claims
    if check is None or not check.parts or score <= GENEROUS_SHARE * rubric.points:
        return False
    mistakes = len(_asserted(substance))
    verified = sum(verified_by_rules(rubric, check.parts, check.set_aside).values())
    return mistakes >= MISTAKES or (
        mistakes > 0 and verified < MISTAKEN_VERIFIED_SHARE * rubric.points
    )


def _asserted(substance: Substance) -> set[str]:
    """The listed wrong claims the answer asserts (each once)."""
    return {c.claim for c in substance.claims if not c.negated}


def _mistaken_reason(
    grade: Grade, substance: Substance, score: float, rubric: Rubric
) -> ReviewReason:
    assert grade.details.claims is not None
    verified = sum(grade.details.claims.verified.values())
    mistakes = len(_asserted(substance))
    claims = f"{mistakes} listed wrong claims" if mistakes > 1 else "a listed wrong claim"
    return ReviewReason(
        code=ReviewCode.THINLY_VERIFIED,
        message=f"{score:g} of {rubric.points:g} points for an answer that asserts {claims}, "
        f"{verified:g} of them verified: the true things beside them may be all it has; a "
        f"person decides",
    )


def _reference(question: Question, rubric: Rubric) -> str:
    """What an answer's content should come from: the reference and the key points (the
    criteria's descriptions where a criterion has none)."""
    parts = [question.answer] if isinstance(question.answer, str) else []
    for c in rubric.criteria:
        parts.extend(c.key_points or [c.description])
    return " ".join(parts)


def _restated_reason(substance: Substance) -> ReviewReason:
    return ReviewReason(
        code=ReviewCode.RESTATED_QUESTION,
        message=f"only {substance.content_share:.0%} of the answer goes beyond the question's "
        f"own words, nothing concrete, {substance.reference_share:.0%} of it the reference's: "
        f"capped at {CAP_SHARE:.0%} of the points",
    )
