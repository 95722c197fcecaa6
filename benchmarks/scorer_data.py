"""The feature table (``scorer_features.py``) as matrices for one data set and setting.

Shared by ``scorer_dev.py`` (model comparison) and ``scorer_review.py`` (review flags), so
both see exactly the same rows: development rows that production's scorer grades (no rule
scored them 0, and in a graded setting they are not among the graded answers). The features
are production's (``grader.calibrate.scorer_rows.setting_features`` over
``grader.engine.scoring.features.answer_features``); only the neighbour rule's k and temperature vary
here, for the grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.datasets import TABLE
from grader.calibrate.scorer_rows import ScorerRow, read_rows, setting_features
from grader.engine.scoring.scorer_model import DEFAULT_K, DEFAULT_TEMPERATURE

SETTINGS = ("none", "graded5", "graded10", "all_other")

SIGNALS = (
    "reference_cosine",
    "reference_margin",
    "topic_margin",
    "semantic_coverage",
    "ngram_coverage",
    "length_log_ratio",
)
# Without the raw cosine, whose scale differs between languages: for one model across both.
SIGNALS_PORTABLE = SIGNALS[1:]
COHORT = ("cohort_reference_z",)  # relative to the question's cohort (production computes it)
JUDGE = ("judge_share", "judge_entropy")
KNN = ("knn_share", "knn_top_similarity", "graded_mean")  # one-stage: beside the signals
RESIDUALS = ("base_share", "knn_residual", "graded_residual")  # two-stage: after them


@dataclass
class Rows:
    """Development rows of one (data set, setting): features by name, target, groups."""

    setting: str
    rows: list[ScorerRow]
    columns: dict[str, np.ndarray]  # feature name -> values (NaN where unavailable)
    share: np.ndarray
    max_score: np.ndarray
    groups: np.ndarray  # "dataset:question"
    dataset: np.ndarray

    def matrix(self, names: tuple[str, ...] | list[str]) -> np.ndarray:
        return np.column_stack([self.columns[n] for n in names])

    def select(self, mask: np.ndarray) -> Rows:
        return Rows(
            setting=self.setting,
            rows=[r for r, m in zip(self.rows, mask, strict=True) if m],
            columns={k: v[mask] for k, v in self.columns.items()},
            share=self.share[mask],
            max_score=self.max_score[mask],
            groups=self.groups[mask],
            dataset=self.dataset[mask],
        )


def load_table(path: Path = TABLE) -> list[ScorerRow]:
    return read_rows(path)


def dev_rows(
    table: list[ScorerRow],
    datasets: tuple[str, ...],
    setting: str,
    base: dict[str, float] | None = None,
    k: int = DEFAULT_K,
    temperature: float = DEFAULT_TEMPERATURE,
    judged: bool = False,
    scored_only: bool = True,
) -> Rows:
    """The development rows production's scorer grades in ``setting``. ``base``: the signals
    scorer's share by id (the rows' own and their graded neighbours'), for the residuals.
    ``judged``: only rows with the judge's reading; ``scored_only=False`` (setting "none"):
    the rows a rule scores too (they can be graded neighbours)."""
    chosen = [
        r
        for r in table
        if r.part == "dev"
        and r.dataset in datasets
        and (r.scored_in(setting) or not scored_only)
        and (r.judge is not None or not judged)
    ]
    shares = {r.id: r.share for r in table}
    features = [
        setting_features(
            r, setting, shares, base, None if base is None else base[r.id],
            k=k, temperature=temperature,
        ).numbers()
        for r in chosen
    ]  # fmt: skip
    names = sorted({n for f in features for n in f})
    columns = {
        n: np.array([np.nan if f.get(n) is None else f[n] for f in features], dtype=float)
        for n in names
    }
    return Rows(
        setting=setting,
        rows=chosen,
        columns=columns,
        share=np.array([r.share for r in chosen]),
        max_score=np.array([r.points for r in chosen]),
        groups=np.array([r.question for r in chosen]),
        dataset=np.array([r.dataset for r in chosen]),
    )


def rule_and_scorer(rows: list[ScorerRow], fit) -> dict[str, dict[str, tuple[float, float, int]]]:
    """Off-topic rules compared on the same answers: per setting and data set, (Pearson, MAE,
    n) over every answer the off-topic rule or the scorer grades (``cv_grades`` with ``fit``
    per fold, and the rule's zeros), in the data set's points."""
    from scipy.stats import pearsonr

    from grader.calibrate.scorer_cv import cv_grades

    graded = cv_grades(rows, fit, SETTINGS)
    zeros = [r for r in rows if r.rule == "off_topic"]
    found: dict[str, dict[str, tuple[float, float, int]]] = {}
    for setting in SETTINGS:
        pairs = [(g.row, g.share) for g in graded if g.setting == setting]
        pairs += [(r, 0.0) for r in zeros if setting == "none" or setting in r.neighbours]
        found[setting] = {}
        for dataset in ("mohler", "ads"):
            mine = [(r, s) for r, s in pairs if r.dataset == dataset]
            human = np.array([r.share * r.points for r, _ in mine])
            got = np.array([s * r.points for r, s in mine])
            found[setting][dataset] = (round(float(pearsonr(human, got).statistic), 4),
                                       round(float(np.mean(np.abs(human - got))), 4),
                                       len(mine))  # fmt: skip
    return found
