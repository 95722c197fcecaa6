"""One calibrated score per judged answer: the scorer weighs the judge against every signal.

The judge's points stay in ``details.judge_points``; the grade's score is the scorer's share
of the points (``grader.engine.scoring.scorer_model``), rounded to half points, unless graded answers with
the same text exist (a copy of a graded answer takes their grade). The criteria keep the
judge's proportions, scaled to the new total, each with evidence from the answer. The grade
records which scorer decided, every feature it read and how much each moved the score, and
which graded answers it leaned on. A strong disagreement between the scorer and the judge is
a review reason; confidence comes from the scorer file's model of when grades are wrong.
"""

from __future__ import annotations

from dataclasses import replace

from grader.engine.judging.budget import split_by_coverage
from grader.engine.scoring.confidence import confidence, uncertainty_signals
from grader.engine.scoring.features import JudgeReading, answer_features
from grader.engine.scoring.points import allocate, to_points
from grader.engine.scoring.scorer_core.inputs import ScorerInput
from grader.engine.scoring.scorer_core.pool import GradedPool, read_answer
from grader.engine.scoring.scorer_core.rules import decide
from grader.engine.scoring.scorer_model import AnswerFeatures, ScorerSet, contributions
from grader.engine.signals.analysis import QuestionAnalysis
from grader.models import (
    AnchoredReading,
    Grade,
    GradedCopy,
    Neighbour,
    Question,
    ReviewCode,
    ReviewReason,
    Rubric,
    ScorerExplanation,
    Submission,
)

DISAGREEMENT = 0.4  # scorer and judge further apart than this share of the points: review
SHOWN_NEIGHBOURS = 3


def answer_evidence(
    submission: Submission,
    question: Question,
    rubric: Rubric,
    analysis: QuestionAnalysis,
    pool: GradedPool | None,
    judge: JudgeReading | None,
) -> ScorerInput:
    """Everything the scorer reads about one answer: its features (the neighbour ones when
    the question has graded answers), graded copies of its text and its nearest graded answers."""
    features = answer_features(
        question, rubric, submission.answer, analysis.signals[submission.id], judge
    )
    return read_answer(
        features,
        rubric.points,
        pool,
        submission.id,
        submission.answer,
        analysis.vectors.get(submission.id),
    )


def scored_grade(
    grade: Grade,
    answer: str,
    rubric: Rubric,
    reading: ScorerInput,
    scorer: ScorerSet,
    review_below: float,
    anchored: AnchoredReading | None = None,
) -> Grade:
    """``grade`` (judged) with the scorer's score, criteria, confidence and reasons; an
    anchored reading with a calibrated value takes its weight of the share (``decide``)."""
    judge_total = sum(c.points for c in grade.criteria)
    if anchored is not None and anchored.calibrated is not None:
        reading = replace(reading, anchored=anchored.calibrated)
    features = reading.features
    decided, share = decide(reading, scorer)
    score = to_points(share, rubric.points)
    criteria = allocate(grade.criteria, rubric, score, answer, grade)
    reasons = [r for r in grade.review_reasons if r.code != ReviewCode.LOW_CONFIDENCE]
    if features.judge_share is not None and abs(features.judge_share - share) >= DISAGREEMENT:
        reasons.append(
            ReviewReason(
                code=ReviewCode.SCORER_DISAGREEMENT,
                message=f"the judge gave {judge_total:.1f} of {rubric.points:g}, the scorer "
                f"{score:g} from the other signals",
            )
        )
    sure = scorer_confidence(share, features, scorer)
    if sure is None:
        sure = grade.confidence
    if sure is not None and sure < review_below:
        reasons.append(
            ReviewReason(code=ReviewCode.LOW_CONFIDENCE, message=f"confidence {sure:.2f}")
        )
    details = grade.details.model_copy(
        update={
            "scorer": _explanation(scorer, decided, share, reading),
        }
        | ({} if anchored is None else {"anchored": anchored})
        | (
            {}
            if split_by_coverage(grade)  # the judge's points, when a judge read the answer
            else {
                "judge_points": grade.details.judge_points
                or {c.id: c.points for c in grade.criteria}
            }
        )
    )
    provenance = grade.provenance.model_copy(
        update={"scorer_version": scorer.version, "scored_by": decided}
    )
    return grade.model_copy(
        update={
            "score": score,
            "criteria": criteria,
            "confidence": sure,
            "needs_review": bool(reasons),
            "review_reasons": reasons,
            "details": details,
            "provenance": provenance,
        }
    )


def scorer_confidence(share: float, features: AnswerFeatures, scorer: ScorerSet) -> float | None:
    """The scorer file's probability that this grade is within a quarter of the points, from
    its first confidence model whose signals the grade has; None: no such model."""
    features = scorer.usable(features)
    signals_scorer = next((s for s in scorer.first_stage if s.serves(features)), None)
    if signals_scorer is None or not scorer.confidence:
        return None
    values = uncertainty_signals(share, features, signals_scorer)
    for model in scorer.confidence:
        row = [v for v in (values.get(name) for name in model.features) if v is not None]
        if len(row) == len(model.features):  # the grade has every signal the model reads
            return round(float(confidence(model, row)[0]), 3)
    return None


def _explanation(
    scorer: ScorerSet,
    decided: str,
    share: float,
    reading: ScorerInput,
) -> ScorerExplanation:
    """What an instructor reads: who decided, on what, how much each signal pushed."""
    features = reading.features
    used = next((s for s in (*scorer.first_stage, *scorer.bands) if s.name == decided), None)
    pushes: dict[str, float] = {}
    if (
        used is not None
        and used.kind == "ridge"
        and decided in {s.name for s in scorer.first_stage}
    ):
        pushes = {k: round(v, 4) for k, v in contributions(used, features).items()}
    return ScorerExplanation(
        version=scorer.version,
        decided_by=decided,
        share=round(share, 4),
        features={
            k: round(v, 4) if isinstance(v, float) else v
            for k, v in features.model_dump().items()
            if v is not None
        },
        contributions=pushes,
        neighbours=[
            Neighbour(id=g.id, score=g.score, similarity=round(sim, 4))
            for g, sim in reading.nearest[:SHOWN_NEIGHBOURS]
        ],
        copies=[GradedCopy(id=c.id, score=c.score) for c in reading.copies],
    )
