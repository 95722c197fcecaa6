"""An exam's scorer refit from its instructors' scores, and its stored grades re-scored by the
refit, or a question's by the scorer as it stands once instructors have scored more of its
answers (``regrade``, the "grade these first" page): what the instructor pages' forms do, with
the judge never called.

Both read the exam from the store as grading reads it. An answer's graded neighbours come from
its own platform's instructor-scored answers to the same question (``store.queue.graded``):
another platform's students never shape a grade. Answers are addressed by the store's id while
the refit and the re-scoring run, since two platforms may both post ``s1``; a re-scored grade
goes back to the platform's ids before it is stored.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from grader.errors import CalibrationError
from grader.models import Grade, GradedAnswer
from grader.service.batches import with_platform_ids
from grader.service.exams import Exam
from grader.service.store import AnswerRow, Store
from grader.service.store.scorers import ExamScorer, Rescored

if TYPE_CHECKING:
    import numpy as np

    from grader.calibrate.tables import ScorePair
    from grader.config import Settings
    from grader.embed import Embedder
    from grader.engine.finish.rescored import Rescoring
    from grader.engine.scoring.scorer_model import ScorerSet


@dataclass(frozen=True)
class Applied:
    """What applying a refit did to the exam's stored grades."""

    rescored: int  # scored again by the refit
    changed: int  # ... whose score moved
    kept: int  # not decided by a scorer (objective, blank, off topic), or lacking its features
    deliveries: list[int] = field(default_factory=list)  # webhooks of the grades that moved


def base_scorer(settings: Settings, store: Store, exam: Exam) -> ScorerSet:
    """The scorer that grades ``exam`` now, chosen as the workers choose it (the refit applied
    last on the pages, else the exam's ``scorer.json``, else the shipped one), with the
    embeddings a refit reads. Refused while ``GRADER_SCORER`` is set: the workers grade with
    it, and would ignore an applied refit."""
    if settings.scorer.choice is not None:
        raise CalibrationError(
            f"GRADER_SCORER is set ({settings.scorer.choice!r}): the service grades every exam "
            "with it and would not use a refit applied here. Unset it to refit on these pages."
        )
    return current_scorer(settings, store, exam)


def current_scorer(settings: Settings, store: Store, exam: Exam) -> ScorerSet:
    """The scorer the workers grade ``exam`` with now, chosen as they choose it
    (``GRADER_SCORER`` first, then the refit applied last, the exam's file, the shipped one);
    a CalibrationError when they grade it without one."""
    from grader.engine.scoring.scorer_choice import choose_scorer, scorer_setting

    setting = scorer_setting(settings.scorer.choice)
    chosen = choose_scorer(setting, exam.path, applied=store.scorers.applied(exam.name)).scorer
    if chosen is None:
        raise CalibrationError(
            "GRADER_SCORER is none: the service grades without a scorer, so there is no "
            "scorer to re-score the grades with."
        )
    return chosen


def propose(
    settings: Settings,
    store: Store,
    exam: Exam,
    instructor: str,
    embedder: Embedder | None,
    *,
    bootstrap: int = 1000,
) -> ExamScorer:
    """Refit the exam's scorer on every answer its instructors scored (the newest score of
    each) and keep it, with its before/after report, as a proposal; a CalibrationError saying
    what is missing when the scored answers are too few."""
    from grader.calibrate.refit import refit
    from grader.calibrate.refit_rows import check_enough, refit_answers
    from grader.engine.scoring.scorer_model import to_json

    base = base_scorer(settings, store, exam)
    found = store.reviews.answers(exam.name, scored_only=True)
    paired = [(r, pair) for r in found if (pair := _score_pair(r)) is not None]
    scored = [r for r, _ in paired]
    pairs = [pair for _, pair in paired]
    grades = {str(r.submission.id): _by_store_id(r) for r in scored}
    rows, notes = refit_answers(pairs, grades, base)
    if len(found) > len(scored):
        notes.append(f"{len(found) - len(scored)} answer(s) you scored have no grade yet: left out")
    platform = {str(r.submission.id): r.submission.platform_id for r in scored}
    rows = [r.model_copy(update={"pool": f"{platform[r.id]}/{r.question}"}) for r in rows]
    try:
        check_enough(rows)
    except CalibrationError as exc:
        raise CalibrationError(" ".join([exc.message, *notes])) from exc
    vectors = _vectors(embedder, {r.id: r.answer for r in rows if r.answer is not None})
    if embedder is None:
        notes.append("the service has no embedding model (GRADER_EMBED_MODEL=none)")
    result = refit(base, rows, vectors, bootstrap=bootstrap, notes=notes)
    report = result.model_dump(mode="json", exclude={"scorer"})
    return store.scorers.propose(
        exam.name, str(result.scorer.version), to_json(result.scorer), report, instructor
    )


def _score_pair(row: AnswerRow) -> ScorePair | None:
    """The answer's instructor score beside its grade; None without both (or without points)."""
    from grader.calibrate.tables import ScorePair

    grade, human = row.submission.grade, row.human
    if human is None or grade is None or not grade.max_score:
        return None
    return ScorePair(
        submission_id=str(row.submission.id),
        question_id=row.submission.question_id,
        max_score=grade.max_score,
        human=human.score,
        judge=grade.score or 0.0,
        answer=row.submission.answer,
    )


def apply(
    settings: Settings,
    store: Store,
    exam: Exam,
    proposal: ExamScorer,
    instructor: str,
    embedder: Embedder | None,
) -> Applied:
    """Make ``proposal`` the exam's scorer and re-score every stored grade of the exam with it,
    from the features the grades recorded (``rescore_grades``), in one transaction."""
    from grader.engine.scoring.scorer_model import from_json

    base_scorer(settings, store, exam)  # refused the same way as a proposal
    scorer = from_json(proposal.text, f"refit {proposal.version} of {exam.name}")
    rescored, applied = rescore(settings, exam, scorer, store.reviews.answers(exam.name), embedder)
    # the scorer re-decided its own review reasons: their queues are ranked again with them
    deliveries = store.scorers.apply(proposal, instructor, rescored, settings.review.share)
    return replace(applied, deliveries=deliveries)


def regrade(
    settings: Settings,
    store: Store,
    exam: Exam,
    question_id: str,
    instructor: str,
    embedder: Embedder | None,
) -> Applied:
    """The question's stored grades re-scored by the exam's scorer as it stands, the
    instructors' scores now in as graded neighbours: what "grade these first" leads to, from
    the features the grades recorded, the judge never called. Stored and ranked again in one
    transaction; an override stays beside the re-scored grade and still wins."""
    scorer = current_scorer(settings, store, exam)
    rows = store.reviews.answers(exam.name, question_id)
    rescored, applied = rescore(settings, exam, scorer, rows, embedder)
    deliveries = store.scorers.rescore(exam.name, rescored, instructor, settings.review.share)
    return replace(applied, deliveries=deliveries)


def rescore(
    settings: Settings,
    exam: Exam,
    scorer: ScorerSet,
    rows: Sequence[AnswerRow],
    embedder: Embedder | None,
) -> tuple[list[Rescored], Applied]:
    """The graded ``rows`` re-scored by ``scorer``, each platform's own scored answers among
    them the neighbours; only the grades that changed are returned to store."""
    by_platform: dict[int, list[AnswerRow]] = defaultdict(list)
    for row in rows:
        if row.submission.grade is not None:
            by_platform[row.submission.platform_id].append(row)
    rescored: list[Rescored] = []
    changed = kept = 0
    for mine in by_platform.values():
        done, result = _rescore_platform(settings, exam, scorer, mine, embedder)
        rescored += done
        changed, kept = changed + result.changed, kept + result.kept
    return rescored, Applied(len(rescored), changed, kept)


def _rescore_platform(
    settings: Settings,
    exam: Exam,
    scorer: ScorerSet,
    rows: Sequence[AnswerRow],
    embedder: Embedder | None,
) -> tuple[list[Rescored], Rescoring]:
    """One platform's grades of the exam re-scored, its own scored answers the neighbours."""
    from grader.engine.finish.rescored import rescore_grades
    from grader.engine.reading.rubrics import rubric_for
    from grader.engine.review.queue import unranked

    graded = [
        GradedAnswer(
            id=str(r.submission.id),
            question_id=r.submission.question_id,
            answer=r.submission.answer,
            score=r.human.score,
        )
        for r in rows
        if r.human is not None
    ]
    answers = {str(r.submission.id): r.submission.answer for r in rows}
    rubrics = {
        q.id: rubric_for(q, exam.rubrics) for q in exam.bank.questions if not q.type.objective
    }
    old = [unranked(_by_store_id(r)) for r in rows]  # re-scored from before the ranking
    result = rescore_grades(
        old, scorer, settings.review.below_confidence,
        graded=graded, answers=answers, vectors=_vectors(embedder, answers), rubrics=rubrics,
    )  # fmt: skip
    external = {str(r.submission.id): r.submission.external_id for r in rows}
    done = [
        Rescored(row.submission.id, _platform_grade(new, external))
        for row, before, new in zip(rows, old, result.grades, strict=True)
        if new is not before
    ]
    return done, result


def _by_store_id(row: AnswerRow) -> Grade:
    """The stored grade named by the store's id (unique across platforms)."""
    assert row.submission.grade is not None
    return row.submission.grade.model_copy(update={"submission_id": str(row.submission.id)})


def _platform_grade(grade: Grade, external: dict[str, str]) -> Grade:
    """A re-scored grade as its platform knows it: its own ids, in the neighbours too."""
    details = with_platform_ids(grade.details, external)
    return grade.model_copy(
        update={"submission_id": external[grade.submission_id], "details": details}
    )


def _vectors(embedder: Embedder | None, texts: dict[str, str]) -> dict[str, np.ndarray] | None:
    """Unit vectors of the answers by id (the embedder's disk cache holds those the workers
    encoded, so the model loads only for a miss), or None without an embedder."""
    if embedder is None or not texts:
        return None
    ids = list(texts)
    return dict(zip(ids, embedder.encode([texts[i] for i in ids]), strict=True))
