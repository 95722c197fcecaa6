"""Refit the scorer on an instructor's grades, and say honestly what it changes.

``refit`` fits the scorer's first stage again on the answers the instructor scored (same
signals, new weights: ``refit_fit``), and checks each second-stage band — the model that
leans on the question's graded answers — the same way: a band refit on these answers replaces
the base's only where enough answers reach it and its question-held-out error is lower;
otherwise the base's band stays. The base's confidence models stay as they are.

The report compares, on the same answers, the grades as they are (BEFORE) with the refit's
out-of-fold grades (AFTER, ``refit_cv``: every answer graded by a refit that never saw its
question), with the usual agreement figures and 95 % intervals. Holding out whole questions
is stricter than the refit's real use (new answers to questions it learned from): the after
figures are a floor, not a promise. Choosing between a refit and a shipped band looks at the
same held-out errors, which flatters the after figures a little where a band was refit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from grader.calibrate.metrics import Agreement, agreement
from grader.calibrate.refit_cv import OutOfFold, Vectors, fit_bands, out_of_fold
from grader.calibrate.refit_fit import refit_first_stage
from grader.calibrate.refit_rows import MIN_ANSWERS, MIN_QUESTIONS, check_enough
from grader.calibrate.scorer_rows import ScorerRow
from grader.calibrate.summary import Comparison, compare
from grader.calibrate.tables import Pairing, ScorePair
from grader.engine.scoring.points import to_points
from grader.engine.scoring.scorer_model import ScorerSet, from_json, to_json


class BandCheck(BaseModel):
    """Whether a second-stage band was refit, on how many answers, and why (not)."""

    model_config = ConfigDict(extra="forbid")

    min_graded: int
    answers: int  # held-out answers routed to it (copies aside)
    questions: int
    refit_mae: float | None  # question-held-out MAE, in points
    base_mae: float | None
    kept: Literal["refit", "base"]
    why: str


class Refit(BaseModel):
    """A refit scorer and its before/after report."""

    model_config = ConfigDict(extra="forbid")

    scorer: ScorerSet
    base_version: str | None
    answers: int
    questions: int
    folds: int
    neighbours: bool  # the after figures lean on graded neighbours, as grading will
    comparison: Comparison  # before: the grades as they are; after: out-of-fold grades
    stage1: Agreement  # the refit's first stage alone, out of fold
    bands: list[BandCheck]
    notes: list[str]


def refit(
    base: ScorerSet,
    rows: Sequence[ScorerRow],
    vectors: Vectors | None = None,
    *,
    folds: int = 5,
    bootstrap: int = 1000,
    seed: int = 0,
    notes: Sequence[str] = (),
) -> Refit:
    """The refit of ``base`` on ``rows`` (``check_enough`` first), with its report.

    ``vectors`` (answer id → unit vector) lets the question's graded answers be neighbours
    in the after figures and in the band check, as they are when the scorer grades; without
    them only graded copies of an answer's text count (when the rows carry the text).
    """
    check_enough(rows)
    rows = list(rows)
    found = out_of_fold(base, rows, vectors, folds)
    checks = _band_checks(base, found)
    refit_kept = {c.min_graded for c in checks if c.kept == "refit"}
    reads = list(found.read.values())
    final = fit_bands(base, reads) if refit_kept else {}
    bands = [final.get(b.min_graded, b) if b.min_graded in refit_kept else b for b in base.bands]
    fitted = base.model_copy(
        update={"first_stage": refit_first_stage(base, rows), "bands": bands, "version": None}
    )
    scorer = from_json(to_json(fitted), "the refit scorer")  # rounded as the file is, versioned
    after = {r.id: _after(found, r.id, refit_kept) for r in rows}
    with_neighbours = vectors is not None and any(r.answer is not None for r in rows)
    return Refit(
        scorer=scorer,
        base_version=base.version,
        answers=len(rows),
        questions=len({r.question for r in rows}),
        folds=found.folds,
        neighbours=with_neighbours,
        comparison=compare(
            _pairing(rows, {r.id: r.current_points() for r in rows}),
            _pairing(rows, {r.id: to_points(after[r.id], r.points) for r in rows}),
            bootstrap=bootstrap,
            seed=seed,
        ),
        stage1=agreement(
            [r.human_points() for r in rows],
            [to_points(found.stage1[r.id], r.points) for r in rows],
            max(r.points for r in rows),
            bootstrap=bootstrap,
            seed=seed,
        ),
        bands=checks,
        notes=[*notes, *_notes(base, rows, with_neighbours)],
    )


def _band_checks(base: ScorerSet, found: OutOfFold) -> list[BandCheck]:
    """Per band of the base: refit or base, from their held-out errors on the answers it grades."""
    checks = []
    for band in base.bands:
        routed = [
            rid
            for rid, read in found.read.items()
            if not read.reading.copies and found.band[rid] == band.min_graded
        ]
        questions = len({found.read[rid].row.question for rid in routed})
        base_mae = _mae(found, routed, found.shipped)
        refit_mae = None
        if routed and all(found.refit[rid] is not None for rid in routed):
            refit_mae = _mae(found, routed, found.refit)
        kept, why = _verdict(len(routed), questions, refit_mae, base_mae)
        checks.append(
            BandCheck(
                min_graded=band.min_graded,
                answers=len(routed),
                questions=questions,
                refit_mae=refit_mae,
                base_mae=base_mae,
                kept=kept,
                why=why,
            )
        )
    return checks


def _verdict(
    answers: int, questions: int, refit_mae: float | None, base_mae: float | None
) -> tuple[Literal["refit", "base"], str]:
    if answers < MIN_ANSWERS or questions < MIN_QUESTIONS:
        return "base", (
            f"{answers} answer(s) on {questions} question(s) reach it; a refit needs "
            f"{MIN_ANSWERS} on {MIN_QUESTIONS}"
        )
    if refit_mae is None:
        return "base", "too few answers reach it in some training folds to fit it there"
    if base_mae is not None and refit_mae >= base_mae:
        return "base", "the refit does not lower the held-out error"
    return "refit", "the refit lowers the held-out error"


def _mae(found: OutOfFold, ids: Sequence[str], shares: dict) -> float | None:
    if not ids:
        return None
    errors = [
        abs(to_points(shares[i], found.read[i].row.points) - found.read[i].row.human_points())
        for i in ids
    ]
    return round(sum(errors) / len(errors), 4)


def _after(found: OutOfFold, rid: str, refit_kept: set[int]) -> float:
    """The answer's after share: its band's refit where that band was kept, else the base's."""
    refit = found.refit[rid]
    if refit is not None and found.band[rid] in refit_kept:
        return refit
    return found.shipped[rid]


def _pairing(rows: Sequence[ScorerRow], scores: dict[str, float]) -> Pairing:
    return Pairing(
        pairs=[
            ScorePair(
                submission_id=r.id,
                question_id=r.question,
                max_score=r.points,
                human=r.human_points(),
                judge=scores[r.id],
                answer=r.answer,
            )
            for r in rows
        ]
    )


def _notes(base: ScorerSet, rows: Sequence[ScorerRow], neighbours: bool) -> list[str]:
    notes = []
    if not base.bands:
        notes.append("the base scorer has no second stage: graded answers count only as copies")
    elif not neighbours:
        notes.append(
            "no answer vectors: the after figures use no graded neighbours (only copies of an "
            "answer's text, when the answers are known) and the base's bands are kept"
        )
    unread = [
        s.name for s in base.first_stage if not any(r.own_features().has(s.features) for r in rows)
    ]
    if unread:
        notes.append(f"kept as they were (no answer has their features): {', '.join(unread)}")
    return notes
