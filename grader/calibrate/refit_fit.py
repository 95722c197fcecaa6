"""The refit's models: the scorer's first stage, and a second-stage band, on an instructor's
answers. Same feature sets, same kinds, new numbers: a refit changes how much each signal
weighs on this exam, not which signals the scorer reads (``scorer_fit`` fits the shipped
default with the same ``fit_model``; this module says which models a refit fits, on what).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from grader.calibrate.refit_rows import MIN_ANSWERS
from grader.calibrate.scorer_fit import Spec, fit_model, trained_on
from grader.calibrate.scorer_rows import ScorerRow
from grader.engine.scoring.scorer_model import AnswerFeatures, Scorer, ScorerSet

# A band's ridge has three features; below this many answers in a fold it is not fit there.
MIN_BAND_ROWS = 12


def refit_first_stage(base: ScorerSet, rows: Sequence[ScorerRow]) -> list[Scorer]:
    """Each of ``base``'s first-stage scorers fit again on the rows that have its features,
    in the same order; one with fewer than ``MIN_ANSWERS`` such rows stays as it was."""
    examples = [(r, r.own_features()) for r in rows]
    out = []
    for scorer in base.first_stage:
        fitted = fit_model(Spec.of(scorer, positive=True), examples, _describe(base), MIN_ANSWERS)
        out.append(scorer if fitted is None else fitted)
    return out


def refit_band(
    band: Scorer, rows: Sequence[tuple[ScorerRow, AnswerFeatures]], base: ScorerSet
) -> Scorer | None:
    """``band`` (a second-stage scorer) fit again on answers routed to it, each with its
    features read as grading reads them (``base_share`` from a first stage not fit on its
    question); None when fewer than ``MIN_BAND_ROWS`` have them."""
    return fit_model(Spec.of(band), rows, _describe(base), MIN_BAND_ROWS)


def _describe(base: ScorerSet) -> Callable[[list[ScorerRow]], dict[str, object]]:
    return lambda used: trained_on(used, refit_of=base.version)
