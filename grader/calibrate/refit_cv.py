"""Out-of-fold grades of a refit, grouped by question: what the refit would give answers of
questions it never learned from.

Each answer is read as grading reads it: its own features, then — when the answers' vectors
are known — its question's other graded answers as neighbours, their residuals measured
against a first stage that was not fit on that question, and graded copies of its text.
The second stage's bands are fit, per fold, on training answers read the same way (an inner
grouped split), so no answer's features ever come from a model that saw its question.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from grader.calibrate.refit_fit import refit_band, refit_first_stage
from grader.calibrate.scorer_cv import question_folds
from grader.calibrate.scorer_rows import ScorerRow
from grader.engine.scoring.scorer_core.inputs import ScorerInput
from grader.engine.scoring.scorer_core.pool import GradedPool, read_answer
from grader.engine.scoring.scorer_core.rules import decide
from grader.engine.scoring.scorer_model import AnswerFeatures, Scorer, ScorerSet
from grader.models import GradedAnswer

Vectors = dict[str, np.ndarray]


@dataclass(frozen=True)
class StagedReading:
    """One answer read with a first stage and its pool's graded answers."""

    row: ScorerRow
    reading: ScorerInput  # features: own, neighbour ones, and base_share
    stage1: float  # the first stage's share (base_share)

    @property
    def features(self) -> AnswerFeatures:
        return self.reading.features


@dataclass
class OutOfFold:
    """Per answer (by id): its out-of-fold reading and shares, and the fold it was held out in."""

    read: dict[str, StagedReading] = field(default_factory=dict)
    stage1: dict[str, float] = field(default_factory=dict)
    shipped: dict[str, float] = field(default_factory=dict)  # refit stage 1, the base's bands
    refit: dict[str, float | None] = field(default_factory=dict)  # refit bands, where fit
    band: dict[str, int | None] = field(default_factory=dict)  # the band that grades it
    fold: dict[str, int] = field(default_factory=dict)
    folds: int = 0


def read_answers(
    rows: Sequence[ScorerRow], signals: list[Scorer], vectors: Vectors | None
) -> list[StagedReading]:
    """Every row read with the first stage ``signals``, its graded neighbours and copies
    drawn from the rows of its pool (never itself)."""
    stage1 = ScorerSet(first_stage=signals)
    by_pool: dict[str, list[ScorerRow]] = defaultdict(list)
    for row in rows:
        by_pool[row.pool or row.question].append(row)
    out = []
    for members in by_pool.values():
        graded = [
            (GradedAnswer(id=r.id, question_id=r.question, answer=text, score=r.human_points()),
             r.own_features())
            for r in members
            if (text := r.answer) is not None
        ]  # fmt: skip
        pool = GradedPool.from_features(members[0].points, graded, vectors, stage1)
        for row in members:
            vector = vectors.get(row.id) if vectors else None
            reading = read_answer(row.own_features(), row.points, pool, row.id, row.answer, vector)
            base = stage1.base(reading.features)[1]
            staged = reading.features.model_copy(update={"base_share": base})
            out.append(StagedReading(row, replace(reading, features=staged), base))
    return out


def share(read: StagedReading, signals: list[Scorer], bands: Sequence[Scorer]) -> float:
    scorer = ScorerSet(first_stage=signals, bands=list(bands))
    return decide(read.reading, scorer)[1]


def out_of_fold(
    base: ScorerSet, rows: Sequence[ScorerRow], vectors: Vectors | None, k: int
) -> OutOfFold:
    """The refit's grades, question-held-out: its first stage alone, with the base's bands,
    and with bands fit on the training questions (where they could be)."""
    result = OutOfFold()
    splits = question_folds(rows, k)
    result.folds = len(splits)
    neighbours = vectors is not None and bool(base.bands)
    for number, (train, test) in enumerate(splits):
        signals = refit_first_stage(base, train)
        bands = _fold_bands(base, train, vectors, k) if neighbours else {}
        for read in read_answers(test, signals, vectors):
            rid = read.row.id
            result.read[rid] = read
            result.fold[rid] = number
            result.stage1[rid] = read.stage1
            result.shipped[rid] = share(read, signals, base.bands)
            band = _band(base, read)
            result.band[rid] = band
            fitted = bands.get(band) if band is not None else None
            result.refit[rid] = (
                share(read, signals, _swap(base.bands, fitted)) if fitted is not None else None
            )
    return result


def _fold_bands(
    base: ScorerSet, train: Sequence[ScorerRow], vectors: Vectors | None, k: int
) -> dict[int, Scorer]:
    """Bands fit on ``train``, each answer read with a first stage not fit on its question."""
    if len({r.question for r in train}) < 2:
        return {}
    reads = []
    for inner_train, inner_test in question_folds(train, k):
        reads += read_answers(inner_test, refit_first_stage(base, inner_train), vectors)
    return fit_bands(base, reads)


def fit_bands(base: ScorerSet, reads: Sequence[StagedReading]) -> dict[int, Scorer]:
    """A refit of each of the base's bands on the reads routed to it (copies aside: the copy
    rule grades them), where there are enough."""
    routed: dict[int, list[tuple[ScorerRow, AnswerFeatures]]] = defaultdict(list)
    for read in reads:
        band = _band(base, read)
        if band is not None and not read.reading.copies:
            routed[band].append((read.row, read.features))
    fitted = {}
    for scorer in base.bands:
        model = refit_band(scorer, routed.get(scorer.min_graded, []), base)
        if model is not None:
            fitted[scorer.min_graded] = model
    return fitted


def _band(base: ScorerSet, read: StagedReading) -> int | None:
    """The ``min_graded`` of the base's band that grades the answer (``ScorerSet.band``)."""
    band = base.band(read.features.graded_count)
    return None if band is None else band.min_graded


def _swap(bands: Sequence[Scorer], fitted: Scorer) -> list[Scorer]:
    """The bands with ``fitted`` in place of the one with its ``min_graded``."""
    return [fitted if b.min_graded == fitted.min_graded else b for b in bands]
