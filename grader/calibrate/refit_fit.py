"""The refit's models: the scorer's first stage, and a second-stage band, on an instructor's
answers. Same feature sets, same kinds, new numbers: a refit changes how much each signal
weighs on this exam, not which signals the scorer reads (``scorer_fit`` fits the shipped
default; this module keeps the instructor's refit apart from it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grader.calibrate.refit_rows import MIN_ANSWERS
from grader.calibrate.scorer_fit import fit_isotonic, fit_ridge
from grader.calibrate.scorer_rows import ScorerRow
from grader.engine.scorer import AnswerFeatures, Scorer, ScorerSet

# A band's ridge has three features; below this many answers in a fold it is not fit there.
MIN_BAND_ROWS = 12


def refit_signals(base: ScorerSet, rows: Sequence[ScorerRow]) -> list[Scorer]:
    """Each of ``base``'s first-stage scorers fit again on the rows that have its features,
    in the same order; one with fewer than ``MIN_ANSWERS`` such rows stays as it was."""
    out = []
    for scorer in base.signals:
        usable = [r for r in rows if scorer.serves(r.own_features())]
        if len(usable) < MIN_ANSWERS:
            out.append(scorer)
            continue
        x = np.array([r.own_features().vector(scorer.features) for r in usable])
        y = np.array([r.share for r in usable])
        fitted = (
            fit_ridge(x, y, scorer.features, positive=True)
            if scorer.kind == "ridge"
            else fit_isotonic(x, y, scorer.features[0])
        )
        out.append(
            fitted.model_copy(
                update={
                    "name": scorer.name,
                    "languages": scorer.languages,
                    "trained_on": _trained_on(usable, base),
                }
            )
        )
    return out


def refit_band(
    band: Scorer, rows: Sequence[tuple[ScorerRow, AnswerFeatures]], base: ScorerSet
) -> Scorer | None:
    """``band`` (a second-stage scorer) fit again on answers routed to it, each with its
    features read as grading reads them (``base_share`` from a first stage not fit on its
    question); None when fewer than ``MIN_BAND_ROWS`` have them."""
    usable = [(r, f) for r, f in rows if f.has(band.features)]
    if len(usable) < MIN_BAND_ROWS:
        return None
    x = np.array([f.vector(band.features) for _, f in usable])
    fitted = fit_ridge(x, np.array([r.share for r, _ in usable]), band.features)
    return fitted.model_copy(
        update={
            "name": band.name,
            "min_graded": band.min_graded,
            "trained_on": _trained_on([r for r, _ in usable], base),
        }
    )


def band_of(bands: Sequence[Scorer], graded_count: int | None) -> int | None:
    """The ``min_graded`` of the band that grades an answer with this many graded answers
    beside it (the largest it reaches, as ``ScorerSet.score`` picks), or None."""
    reached = [b.min_graded for b in bands if b.min_graded <= (graded_count or 0)]
    return max(reached) if reached else None


def _trained_on(rows: Sequence[ScorerRow], base: ScorerSet) -> dict[str, object]:
    return {
        "data": "an instructor's grades of this exam",
        "answers": len(rows),
        "questions": len({r.question for r in rows}),
        "refit_of": base.version,
    }
