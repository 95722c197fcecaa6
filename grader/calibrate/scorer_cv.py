"""Cross-validation by question for the two-stage scorer, grading as production grades.

Two things need shares that a scorer made without seeing the answer's question: stage 2's
residuals (a graded neighbour's human share minus its stage-1 share), and the grades the
confidence model learns from (and a refit reports). Folds keep a question's answers together
(GroupKFold), so a question's graded answers are always on the same side as the question.

``grade_rows`` is the production decision over table rows: graded neighbours' stage-1 shares
from the scorer without the judge (``GradedPool.build``), the neighbour features, the copy
rule, then ``ScorerSet.score`` (``grader.engine.scoring.scorer_core.rules.decide``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from grader.calibrate.scorer_rows import ScorerRow, reading
from grader.engine.scoring.scorer_core.rules import decide
from grader.engine.scoring.scorer_model import AnswerFeatures, Scorer, ScorerSet

FOLDS = 5


@dataclass(frozen=True)
class Graded:
    """One row graded in one setting: who decided, the share, the features it read."""

    row: ScorerRow
    setting: str
    decided: str
    share: float
    features: AnswerFeatures


def question_split(
    groups: Sequence[str], folds: int = FOLDS
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(training indices, held-out indices) of each fold: answers with the same question
    (``groups``) share one fold (scikit-learn's GroupKFold). Every fit of the scorer, and
    every benchmark of its designs, splits here."""
    from sklearn.model_selection import GroupKFold

    splits = GroupKFold(n_splits=min(folds, len(set(groups))))
    return list(splits.split(np.zeros(len(groups)), groups=groups))


def question_folds(
    rows: Sequence[ScorerRow], folds: int = FOLDS
) -> list[tuple[list[ScorerRow], list[ScorerRow]]]:
    """(training rows, held-out rows) of each fold, in the rows' order (``question_split``):
    the default fit and a refit split alike."""
    return [
        ([rows[i] for i in train], [rows[i] for i in held])
        for train, held in question_split([r.question for r in rows], folds)
    ]


def oof_base(
    rows: Sequence[ScorerRow], fit_first_stage: Callable[[list[ScorerRow]], list[Scorer]]
) -> tuple[dict[str, float], dict[str, float]]:
    """(plain, own): each row's stage-1 share from scorers fit on the other questions;
    ``plain`` without the judge's reading (what a graded neighbour gets), ``own`` with it."""
    plain: dict[str, float] = {}
    own: dict[str, float] = {}
    for train, held in question_folds(rows):
        stage1 = ScorerSet(first_stage=fit_first_stage(train))
        for row in held:
            plain[row.id] = stage1.base(row.features)[1]
            own[row.id] = stage1.base(row.own_features())[1]
    return plain, own


def grade_rows(
    rows: Sequence[ScorerRow], scorer: ScorerSet, settings: Sequence[str]
) -> list[Graded]:
    """Each row that production's scorer would grade in each setting, graded by ``scorer``.
    A row's graded neighbours must be among ``rows`` (they are answers of its question)."""
    shares = {r.id: r.share for r in rows}
    base = {r.id: scorer.base(r.features)[1] for r in rows}
    reads_wording = any("wording_residual" in g.features for g in scorer.bands)
    texts = {r.id: r.answer for r in rows} if reads_wording else None
    out = []
    for setting in settings:
        for row in rows:
            if not row.scored_in(setting):
                continue
            read = reading(row, setting, shares, base, texts=texts)
            decided, share = decide(read, scorer)
            out.append(Graded(row, setting, decided, share, read.features))
    return out


def cv_grades(
    rows: Sequence[ScorerRow],
    fit: Callable[[list[ScorerRow]], ScorerSet],
    settings: Sequence[str],
) -> list[Graded]:
    """Out-of-fold grades: per fold the whole scorer is fit (``fit``) on the other questions,
    as the shipped scorer meets a new exam, then the fold's answers are graded."""
    out = []
    for train, held in question_folds(rows):
        out += grade_rows(held, fit(train), settings)
    return out
