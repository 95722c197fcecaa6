"""One calibration run: agreement overall, per question and per criterion, and the answers the
judge and the instructor disagree on most, for the instructor to read."""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, ConfigDict, Field

from grader.calibrate.metrics import Agreement, agreement
from grader.calibrate.tables import CriterionPair, Pairing, ScorePair, question_order


class QuestionAgreement(Agreement):
    question_id: str


class CriterionAgreement(Agreement):
    question_id: str
    criterion_id: str


class Disagreement(BaseModel):
    """One answer the two graders scored far apart, with what the judge based its score on."""

    model_config = ConfigDict(extra="forbid")

    submission_id: str
    question_id: str
    max_score: float
    human: float
    judge: float
    difference: float = Field(description="Judge minus human.")
    answer: str | None = None
    feedback: str | None = None
    criteria: list[CriterionPair] = Field(default_factory=list)


class Calibration(BaseModel):
    """Everything an instructor needs to decide whether to trust the judge on this exam."""

    model_config = ConfigDict(extra="forbid")

    overall: Agreement
    questions: list[QuestionAgreement]
    criteria: list[CriterionAgreement]
    disagreements: list[Disagreement]
    human_only: list[str] = Field(default_factory=list)
    judge_unscored: list[str] = Field(default_factory=list)
    judge_only: int = 0
    excluded_anchors: list[str] = Field(default_factory=list)
    bootstrap: int
    seed: int
    notes: list[str] = Field(default_factory=list)


class Comparison(BaseModel):
    """Agreement of two grading runs on the same answers (e.g. before and after new anchors)."""

    model_config = ConfigDict(extra="forbid")

    before: Calibration
    after: Calibration
    common: int = Field(description="Answers scored by the instructor and by both runs.")


def calibrate(
    pairing: Pairing, *, top: int = 10, bootstrap: int = 1000, seed: int = 0
) -> Calibration:
    """Agreement figures and the ``top`` largest disagreements for matched scores."""
    pairs = pairing.pairs
    by_question: dict[str, list[ScorePair]] = defaultdict(list)
    for pair in pairs:
        by_question[pair.question_id].append(pair)
    scales = {p.max_score for p in pairs}
    notes = []
    if len(scales) > 1:
        notes.append("questions have different point scales; overall figures pool raw points")
    overall = agreement(
        [p.human for p in pairs],
        [p.judge for p in pairs],
        max(scales, default=0.0),
        bootstrap=bootstrap,
        seed=seed,
    )
    questions = [
        QuestionAgreement(
            question_id=qid,
            **agreement(
                [p.human for p in items],
                [p.judge for p in items],
                items[0].max_score,
                bootstrap=bootstrap,
                seed=seed,
            ).model_dump(),
        )
        for qid, items in sorted(by_question.items(), key=lambda kv: question_order(kv[0]))
    ]
    return Calibration(
        overall=overall,
        questions=questions,
        criteria=_criteria(by_question, bootstrap, seed),
        disagreements=largest_disagreements(pairs, top),
        human_only=pairing.human_only,
        judge_unscored=pairing.judge_unscored,
        judge_only=pairing.judge_only,
        excluded_anchors=pairing.excluded_anchors,
        bootstrap=bootstrap,
        seed=seed,
        notes=notes,
    )


def _criteria(
    by_question: dict[str, list[ScorePair]], bootstrap: int, seed: int
) -> list[CriterionAgreement]:
    """Per criterion of each question, over the answers the instructor scored per criterion."""
    results = []
    for qid, items in sorted(by_question.items(), key=lambda kv: question_order(kv[0])):
        scored: dict[str, list[CriterionPair]] = defaultdict(list)
        for pair in items:
            for criterion in pair.criteria:
                if criterion.human is not None:
                    scored[criterion.id].append(criterion)
        for cid, criteria in scored.items():
            figures = agreement(
                [c.human for c in criteria if c.human is not None],
                [c.judge for c in criteria],
                criteria[0].max_points,
                bootstrap=bootstrap,
                seed=seed,
            )
            results.append(
                CriterionAgreement(question_id=qid, criterion_id=cid, **figures.model_dump())
            )
    return results


def largest_disagreements(pairs: list[ScorePair], top: int) -> list[Disagreement]:
    """The ``top`` answers with the largest gap relative to their question's points."""
    ranked = sorted(
        (p for p in pairs if abs(p.judge - p.human) > 1e-9),
        key=lambda p: (
            -abs(p.judge - p.human) / p.max_score,
            -abs(p.judge - p.human),
            p.submission_id,
        ),
    )
    return [
        Disagreement(
            submission_id=p.submission_id,
            question_id=p.question_id,
            max_score=p.max_score,
            human=p.human,
            judge=p.judge,
            difference=p.judge - p.human,
            answer=p.answer,
            feedback=p.feedback,
            criteria=p.criteria,
        )
        for p in ranked[:top]
    ]


def compare(
    before: Pairing, after: Pairing, *, top: int = 10, bootstrap: int = 1000, seed: int = 0
) -> Comparison:
    """Both runs on the answers they share, so a change in agreement is not a change of sample."""
    common = {p.submission_id for p in before.pairs} & {p.submission_id for p in after.pairs}
    return Comparison(
        before=calibrate(before.restricted_to(common), top=top, bootstrap=bootstrap, seed=seed),
        after=calibrate(after.restricted_to(common), top=top, bootstrap=bootstrap, seed=seed),
        common=len(common),
    )
