"""The answers a refit learns from: scored by the instructor, decided by the scorer, with the
features the grade recorded.

A refit never calls a model: every input is in the grades already (``details.scorer.features``,
the answer's own features) or in the instructor's scores. The answer's text, when known,
lets graded answers of the same question be neighbours and copies, as they are in grading.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grader.calibrate.scorer_rows import JudgeSeen, ScorerRow
from grader.calibrate.tables import ScorePair
from grader.engine.finish.rescored import stored_features
from grader.engine.scoring.scorer_core.rules import readable
from grader.engine.scoring.scorer_model import JUDGE_FEATURES, AnswerFeatures, ScorerSet
from grader.errors import CalibrationError
from grader.models import Grade

# A ridge over up to seven standardised features wants several answers per feature, and at
# fewer than 30 answers a 95 % interval of Pearson or MAE spans most of the scale.
MIN_ANSWERS = 30
# Cross-validation holds out whole questions: with fewer than 3, each fold learns from one or
# two questions, and the after figures say little about how the refit grades the others.
MIN_QUESTIONS = 3


def refit_row(pair: ScorePair, features: AnswerFeatures) -> ScorerRow:
    """One answer an instructor scored (``pair``), as the scorer's rows hold it: ``features``
    as its grade recorded them (the judge's reading apart, as in the default's table); the
    question is its group and its pool of graded neighbours."""
    judge = None
    if features.judge_share is not None:
        judge = JudgeSeen(share=features.judge_share, entropy=features.judge_entropy)
    return ScorerRow(
        id=pair.submission_id,
        question=pair.question_id,
        share=min(1.0, pair.human / pair.max_score),
        points=pair.max_score,
        answer=pair.answer,
        features=features.model_copy(update=dict.fromkeys(JUDGE_FEATURES)),
        judge=judge,
        human=pair.human,
        current=pair.judge,
    )


def refit_answers(
    pairs: Sequence[ScorePair], grades: Mapping[str, Grade], base: ScorerSet
) -> tuple[list[ScorerRow], list[str]]:
    """The rows of the instructor's answers whose grade the scorer decided; and notes saying
    what was left out and why. ``grades``: the newest grade per submission id."""
    rows, unread = [], 0
    for pair in pairs:
        grade = grades[pair.submission_id]
        features = stored_features(grade)
        if features is None or not readable(base, features):
            unread += 1
            continue
        rows.append(refit_row(pair, features))
    notes = []
    if unread:
        notes.append(
            f"{unread} answer(s) you scored were not graded by the scorer (objective, blank, "
            "off topic, or graded without answer embeddings): left out"
        )
    return rows, notes


def check_enough(rows: Sequence[ScorerRow]) -> None:
    """A CalibrationError saying the minimum, and why, when the rows are too few to refit."""
    questions = len({r.question for r in rows})
    if len(rows) >= MIN_ANSWERS and questions >= MIN_QUESTIONS:
        return
    raise CalibrationError(
        f"too few answers to refit the scorer: {len(rows)} answer(s) on {questions} "
        f"question(s) are scored by you and were graded by the scorer; a refit needs at "
        f"least {MIN_ANSWERS} answers on at least {MIN_QUESTIONS} questions (its before/after "
        "figures hold out whole questions, and fewer answers leave intervals that span most "
        "of the scale). Score more answers, on more questions, then refit."
    )
