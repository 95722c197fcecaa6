"""From the probability-mode judge's label distributions to one grade.

Each check's points are the expected value of its distribution; a criterion's points are the
sum over its checks. Evidence is the answer's own span closest to the criterion
(``closest_evidence``), shown for every criterion so an instructor sees what was found, and it
cannot be invented; the rationale is the judge's answers in one line; feedback names what is
missing. Confidence falls with the judge's uncertainty (the distributions' entropy) and with
the gap to key-point coverage. A suspected injection is named among the review reasons; the
pipeline grades its cleaned twin and keeps the lower grade (``finish.injection_bound``). If a check got no distribution the grade is ``unscored``, never a silent 0.
"""

from __future__ import annotations

from grader.config import ReviewSettings
from grader.engine.judging.checks import Check
from grader.engine.judging.evidence import closest_evidence
from grader.engine.judging.feedback import missing_criteria, template_feedback
from grader.engine.judging.probability_requests import ProbabilityWork
from grader.engine.judging.reasons import injection_reason, judged_reasons, model_free_points
from grader.engine.judging.rule_grades import unscored_grade
from grader.engine.signals.coverage import coverage_points
from grader.judge.base import LabelScores
from grader.models import (
    CheckReading,
    CriterionScore,
    Grade,
    GradeDetails,
    GradeProvenance,
    GradeStatus,
    JudgeModeName,
    Method,
    ReviewReason,
    TrailStep,
)

SHOWN_SUBJECT_CHARS = 24
NO_EVIDENCE_BELOW = 0.05  # expected points under this are shown as 0


def probability_grade(
    item: ProbabilityWork, provenance: GradeProvenance, review: ReviewSettings
) -> Grade:
    """The grade of an answer scored by label probabilities."""
    failed = [s for s in item.scores if s.error is not None]
    if failed or not item.scores:
        return _unscored(item, failed, provenance)
    prefix, answer = item.prefix, item.submission.answer
    criteria, checks = scored_criteria(item)
    score = sum(c.points for c in criteria)
    reasons: list[ReviewReason] = []
    if item.injections:
        reasons.append(injection_reason(item.injections))
    rubric = prefix.rubric
    coverage = coverage_points(rubric, answer)
    model_free = model_free_points(coverage, item.signals)
    certainty = 1.0 - _mean_entropy(checks)
    gap = abs(score - model_free) / rubric.points
    confidence = round(max(0.0, min(certainty, 1.0 - gap)), 3)
    reasons += judged_reasons(
        score, model_free, confidence, item.signals, prefix.question, rubric, review
    )
    missing = missing_criteria(rubric, criteria)
    return Grade(
        submission_id=item.submission.id,
        question_id=item.submission.question_id,
        student=item.submission.student,
        status=GradeStatus.GRADED,
        score=round(score, 2),
        max_score=rubric.points,
        method=Method.JUDGE,
        criteria=criteria,
        feedback=template_feedback(prefix.question.language, missing),
        confidence=confidence,
        needs_review=bool(reasons),
        review_reasons=reasons,
        details=GradeDetails(
            judge_mode=JudgeModeName.PROBABILITY,
            judge_points={c.id: c.points for c in criteria},
            checks=checks,
            coverage_points=round(coverage, 2),
            missing=missing,
        ),
        signals=item.signals,
        provenance=provenance,
    ).moved(
        TrailStep.JUDGE,
        None,
        f"the judge's expected points over {len(checks)} check(s), read from its label "
        "probabilities",
    )


def scored_criteria(item: ProbabilityWork) -> tuple[list[CriterionScore], list[CheckReading]]:
    """Criterion scores with evidence and rationale, and each check's distribution."""
    prefix, answer = item.prefix, item.submission.answer
    zh = prefix.question.language == "zh"
    per_check = [
        (check, s.probabilities, check.expected_points(s.probabilities), s.mass)
        for check, s in zip(prefix.checks, item.scores, strict=True)
    ]
    criteria = []
    for criterion in prefix.rubric.criteria:
        mine = [(c, p, e) for c, p, e, _ in per_check if c.criterion == criterion.id]
        points = min(criterion.points, sum(e for _, _, e in mine))
        points = 0.0 if points < NO_EVIDENCE_BELOW else round(points, 2)
        criteria.append(
            CriterionScore(
                id=criterion.id,
                points=points,
                max_points=criterion.points,
                evidence=closest_evidence(criterion, answer, item.signals),
                rationale=_rationale(mine, zh),
            )
        )
    checks = [
        CheckReading(
            criterion=c.criterion,
            subject=c.subject,
            probabilities={k: round(v, 4) for k, v in p.items()},
            expected_points=round(e, 3),
            entropy=round(c.entropy(p), 3),
            mass=round(m, 3),
        )
        for c, p, e, m in per_check
    ]
    return criteria, checks


def _rationale(checks: list[tuple[Check, dict[str, float], float]], zh: bool) -> str:
    """The judge's answers in one line: 'yes 82 %: key point…' per check, or the score."""
    parts = []
    for check, probabilities, expected in checks:
        if check.kind == "yes_no":
            p_yes = probabilities.get(check.labels[-1], 0.0)
            said = (
                (check.labels[-1] if p_yes >= 0.5 else check.labels[0])
                if zh
                else ("yes" if p_yes >= 0.5 else "no")
            )
            subject = check.subject[:SHOWN_SUBJECT_CHARS]
            parts.append(f"{said} {max(p_yes, 1 - p_yes):.0%}：{subject}" if zh else
                         f"{said} {max(p_yes, 1 - p_yes):.0%}: {subject}")  # fmt: skip
        else:
            parts.append(f"{expected:.1f}/{check.points:g}")
    return ("；" if zh else "; ").join(parts)


def _mean_entropy(checks: list[CheckReading]) -> float:
    return sum(c.entropy for c in checks) / len(checks) if checks else 0.0


def _unscored(
    item: ProbabilityWork, failed: list[LabelScores], provenance: GradeProvenance
) -> Grade:
    transient = bool(failed) and all(s.transient for s in failed)
    reason = failed[0].error if failed else "no checks were scored"
    why = f"{len(failed)} of {len(item.scores)} checks got no distribution: {reason}"
    return unscored_grade(item.submission, item.prefix.rubric, transient, why, provenance)
