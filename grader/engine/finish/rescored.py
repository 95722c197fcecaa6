"""A grade scored again by another scorer, from what the grade recorded: no judge, no model.

Every grade the scorer decided keeps the judge's points (``details.judge_points``) and the
answer's own features (``details.scorer.features``). A new scorer — an instructor's refit —
reads those features again. What depends on the scorer or on the graded answers is computed
afresh: the neighbour features (their residuals are measured against the scorer's first
stage), the copies and the nearest graded answers, when the caller knows the graded answers
(``GradedPool.from_features``) and has vectors for the answer; without a pool the copies the
grade recorded still decide (a human score does not change with the scorer) and the grade
is scored by its own features alone.

The new grade says what it replaced: ``details.rescored_from`` = the previous score, scorer
version and who decided.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from grader.engine.finish.context import Finishing, Scoring
from grader.engine.finish.final import finish, finish_many
from grader.engine.reading.injection import flag
from grader.engine.scoring.scorer_core.inputs import Copy, ScorerInput
from grader.engine.scoring.scorer_core.pool import GradedPool, read_answer
from grader.engine.scoring.scorer_core.rules import copy_share, readable
from grader.engine.scoring.scorer_model import (
    FEATURE_NAMES,
    NEIGHBOUR_FEATURES,
    AnswerFeatures,
    ScorerSet,
)
from grader.models import (
    AnswerVariant,
    Criterion,
    Grade,
    GradedAnswer,
    GradeStatus,
    RescoredFrom,
    ReviewCode,
    ReviewReason,
    Rubric,
    TrailStep,
)

if TYPE_CHECKING:
    import numpy as np

OWN_FEATURES = (
    *(n for n in FEATURE_NAMES if n not in {*NEIGHBOUR_FEATURES, "base_share"}),
    "language",
)
# Review reasons the scorer gives; the judge's own stay with the grade.
SCORER_REASONS = {ReviewCode.SCORER_DISAGREEMENT, ReviewCode.LOW_CONFIDENCE}


def stored_features(grade: Grade) -> AnswerFeatures | None:
    """The answer's own features as its grade recorded them; None when no scorer decided it
    (objective, blank, off topic, unscored, or graded without the scorer)."""
    explained = grade.details.scorer
    if grade.status != GradeStatus.GRADED or explained is None:
        return None
    own = {k: v for k, v in explained.features.items() if k in OWN_FEATURES}
    return AnswerFeatures.model_validate(own)


def rescored(
    grade: Grade,
    scorer: ScorerSet,
    review_below: float,
    *,
    answer: str | None = None,
    pool: GradedPool | None = None,
    vector: np.ndarray | None = None,
    rubric: Rubric | None = None,
) -> Grade | None:
    """``grade`` scored by ``scorer`` from its stored features and finished as a fresh grade is
    (``final.finish``); None when the scorer cannot (no scorer decided the grade, or none of
    its models has the features the grade kept).

    ``rubric``, when it is the one the grade was graded against, lets a criterion that gets
    points now show evidence from its key points; otherwise the grade's own criteria serve.
    A suspected injection is bound again: the other variant's recorded grade is re-scored
    beside this one and the lower stands.
    """
    features, before = stored_features(grade), grade.details.scorer
    if features is None or before is None or grade.max_score is None:
        return None
    if not readable(scorer, features):
        return None
    rubric = _rubric(grade, rubric, grade.max_score)
    again = _Again(scorer, review_below, rubric, answer, pool, vector)
    injection = grade.details.injection
    if injection is None:
        new = finish(judged(grade), again.context(grade, AnswerVariant.RAW))
    elif injection.other is not None:
        other = (
            AnswerVariant.RAW if injection.kept == AnswerVariant.CLEANED else AnswerVariant.CLEANED
        )
        variants = {injection.kept: grade, other: injection.other}
        raw, cleaned = variants[AnswerVariant.RAW], variants[AnswerVariant.CLEANED]
        first = replace(
            again.context(raw, AnswerVariant.RAW), twin=1, injection=_injection_reason(grade)
        )
        pair = [again.start(raw), again.start(cleaned)]
        new = finish_many(pair, [first, again.context(cleaned, AnswerVariant.CLEANED)])[0]
    else:  # recorded before the other variant's grade was kept: its score binds
        kept_raw = injection.kept == AnswerVariant.RAW
        other_score = injection.cleaned_score if kept_raw else injection.raw_score
        context = again.context(grade, injection.kept)
        new = finish(judged(grade), replace(context, other_score=other_score))
    was = RescoredFrom(
        score=grade.score, scorer_version=before.version, decided_by=before.decided_by
    )
    return new.model_copy(update={"details": new.details.model_copy(update={"rescored_from": was})})


@dataclass(frozen=True)
class _Again:
    """What every variant of one re-scored answer shares."""

    scorer: ScorerSet
    review_below: float
    rubric: Rubric
    answer: str | None
    pool: GradedPool | None
    vector: np.ndarray | None

    def start(self, grade: Grade) -> Grade:
        """A variant as the judge left it, when the scorer can read it; else as recorded."""
        features = stored_features(grade)
        if features is None or not readable(self.scorer, features):
            return grade
        return judged(grade)

    def context(self, grade: Grade, variant: AnswerVariant) -> Finishing:
        """The finishing context of one variant: its own text (the cleaned twin's is the
        answer with the attempt cut out) and what the scorer reads of it."""
        text = self.answer
        if variant == AnswerVariant.CLEANED and text is not None:
            found = flag(text)
            text = found.cleaned if found is not None else text
        features = stored_features(grade)
        if features is None or not readable(self.scorer, features):
            return Finishing(answer=text, rubric=self.rubric)
        points = self.rubric.points
        if self.pool is not None:
            vector = self.vector if variant == AnswerVariant.RAW else None
            inputs = read_answer(features, points, self.pool, grade.submission_id, text, vector)
        else:  # the graded answers are unknown: the copies the grade recorded still stand
            inputs = ScorerInput(features, _recorded_copies(grade, points))
        # plan ``anchored``: the judge's reading still counts
        scoring = Scoring(self.scorer, inputs, self.review_below, grade.details.anchored)
        return Finishing(answer=text, rubric=self.rubric, scoring=scoring)


ORIGINS = {TrailStep.OBJECTIVE, TrailStep.RULE, TrailStep.JUDGE, TrailStep.COVERAGE}


def judged(grade: Grade) -> Grade:
    """The grade as the judge left it, before any scorer: its points per criterion, its own
    review reasons, its trail up to where finishing began."""
    points = grade.details.judge_points or _coverage_points(grade)
    criteria = [c.model_copy(update={"points": points.get(c.id, c.points)}) for c in grade.criteria]
    reasons = [r for r in grade.review_reasons if r.code not in SCORER_REASONS]
    details = grade.details.without("scorer", "rescored_from", "injection")
    if grade.details.trail is not None:
        start = list(itertools.takewhile(lambda e: e.step in ORIGINS, grade.trail))
        details = details.model_copy(update={"trail": start})
    return grade.model_copy(
        update={"criteria": criteria, "review_reasons": reasons, "details": details}
    )


def _injection_reason(grade: Grade) -> ReviewReason:
    """The suspected injection's reason as the grade recorded it."""
    found = (r for r in grade.review_reasons if r.code == ReviewCode.SUSPECTED_INJECTION)
    return next(
        found, ReviewReason(code=ReviewCode.SUSPECTED_INJECTION, message="suspected injection")
    )


def _coverage_points(grade: Grade) -> dict[str, float]:
    """Where no judge read the answer, its criteria's points as the coverage split first gave
    them (the proportions the scorer spreads its total by), not as later steps left them."""
    shares = grade.details.coverage if grade.details.split == "coverage" else None
    if not shares:
        return {}
    return {c.id: round(c.max_points * shares.get(c.id, 0.0), 2) for c in grade.criteria}


def _recorded_copies(grade: Grade, points: float) -> tuple[Copy, ...]:
    explained = grade.details.scorer
    return tuple(
        Copy(c.id, copy_share(c.score, points), c.score)
        for c in (explained.copies if explained else [])
        if c.score is not None
    )


def _rubric(grade: Grade, rubric: Rubric | None, points: float) -> Rubric:
    """``rubric`` when it has the grade's criteria and ``points`` (the grade's maximum);
    else one made of them."""
    ids = [c.id for c in grade.criteria]
    if (
        rubric is not None
        and [c.id for c in rubric.criteria] == ids
        and abs(rubric.points - points) < 1e-9
    ):
        return rubric
    return Rubric(
        question_id=grade.question_id,
        points=points,
        criteria=[
            Criterion(id=c.id, description="", points=c.max_points)
            for c in grade.criteria
            if c.max_points > 0
        ],
    )


@dataclass
class Rescoring:
    """Grades after a re-score, in the order given, and what happened to them."""

    grades: list[Grade] = field(default_factory=list)
    rescored: int = 0  # scored again by the scorer
    changed: int = 0  # ... whose score moved
    kept: int = 0  # left as they were: no scorer decided them, or it lacks their features
    neighbours: int = 0  # graded answers that served as neighbours or copies
    unused: list[str] = field(default_factory=list)  # graded answers that could not


def rescore_grades(
    grades: Sequence[Grade],
    scorer: ScorerSet,
    review_below: float,
    *,
    graded: Sequence[GradedAnswer] | None = None,
    answers: Mapping[str, str] | None = None,
    vectors: Mapping[str, np.ndarray] | None = None,
    rubrics: Mapping[str, Rubric] | None = None,
) -> Rescoring:
    """Every grade the scorer can read scored again; the others as they were.

    ``graded``: the human-scored answers, in the grades' id space (one platform's, in the
    service). Each is a neighbour or a copy through its own grade's stored features (a graded
    answer without such a grade cannot be read by the scorer and is listed in ``unused``).
    ``answers`` (id → text) and ``vectors`` (id → unit vector) let them be found: copies need
    the text, neighbours the vectors. Without ``graded`` the copies each grade recorded stand.
    """
    answers, rubrics = answers or {}, rubrics or {}
    newest = {g.submission_id: g for g in grades}
    pools: dict[str, GradedPool] = {}
    result = Rescoring()
    if graded is not None:
        pools, result.unused = _pools(graded, newest, scorer, vectors)
        result.neighbours = sum(len(p.answers) for p in pools.values())
    for grade in grades:
        new = rescored(
            grade,
            scorer,
            review_below,
            answer=answers.get(grade.submission_id),
            pool=_pool_of(grade, pools, scorer) if graded is not None else None,
            vector=vectors.get(grade.submission_id) if vectors else None,
            rubric=rubrics.get(grade.question_id),
        )
        if new is None:
            result.kept += 1
            result.grades.append(grade)
            continue
        result.rescored += 1
        result.changed += new.score != grade.score
        result.grades.append(new)
    return result


def _pool_of(grade: Grade, pools: Mapping[str, GradedPool], scorer: ScorerSet) -> GradedPool:
    """The question's pool; an empty one when it has no graded answers (then none is a copy,
    whatever the grade recorded)."""
    if grade.question_id in pools:
        return pools[grade.question_id]
    return GradedPool.from_features(grade.max_score or 1.0, [], None, scorer)


def _pools(
    graded: Sequence[GradedAnswer],
    newest: Mapping[str, Grade],
    scorer: ScorerSet,
    vectors: Mapping[str, np.ndarray] | None,
) -> tuple[dict[str, GradedPool], list[str]]:
    """Per question, the graded answers the scorer can read, from their own grades."""
    by_question: dict[str, list[tuple[GradedAnswer, AnswerFeatures]]] = {}
    points: dict[str, float] = {}
    unused = []
    for g in graded:
        grade = newest.get(g.id)
        features = stored_features(grade) if grade is not None else None
        if (
            grade is None
            or features is None
            or grade.max_score is None
            or not readable(scorer, features)
        ):
            unused.append(g.id)
            continue
        by_question.setdefault(g.question_id, []).append((g, features))
        points[g.question_id] = grade.max_score
    usable = dict(vectors) if vectors else None
    if usable is not None and any(g.id not in usable for g in graded if g.id not in unused):
        usable = None  # a graded answer without a vector: copies only, never a partial pool
    pools = {
        qid: GradedPool.from_features(points[qid], members, usable, scorer)
        for qid, members in by_question.items()
    }
    return pools, unused
