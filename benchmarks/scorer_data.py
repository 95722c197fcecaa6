"""The feature table (``scorer_features.py``) as matrices for one data set and setting.

Shared by ``scorer_dev.py`` (model comparison) and ``scorer_review.py`` (review flags), so
both see exactly the same rows. Only development rows are ever returned.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grader.engine.scorer import DEFAULT_K, DEFAULT_TEMPERATURE, AnswerFeatures, neighbour_features

TABLE = Path(__file__).resolve().parent / "results" / "scorer_features.jsonl.gz"
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
COHORT = ("cohort_reference_z", "cohort_coverage_z")  # relative to the question's cohort
# What ships: every weight positive, so each feature's push can be shown to an instructor
# (topic_margin and cohort_coverage_z took negative weights beside their near-twins).
EXPLAINABLE = ("reference_margin", "semantic_coverage", "ngram_coverage", "length_log_ratio")
KNN = ("knn_share", "knn_top_similarity", "graded_mean")  # one-stage: beside the signals
RESIDUALS = ("base_share", "knn_residual", "graded_residual")  # two-stage: after them


@dataclass
class Rows:
    """Development rows of one (data set, setting): features by name, target, groups."""

    setting: str
    rows: list[dict]
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


def load_table(path: Path = TABLE) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def row_features(
    row: dict,
    setting: str,
    shares: dict[str, float],
    base: dict[str, float] | None = None,
    k: int = DEFAULT_K,
    temperature: float = DEFAULT_TEMPERATURE,
) -> dict[str, float | None]:
    """Every feature of one answer in one setting (neighbour features only when graded).

    ``shares``: the human share of every answer by id; ``base``: the signals scorer's share
    by id (for this answer and its graded neighbours), when the residuals are wanted.
    """
    values: dict[str, float | None] = dict(AnswerFeatures(**row["features"]).model_dump())
    values["cohort_reference_z"] = row["cohort_z"]["reference_margin"]
    values["cohort_coverage_z"] = row["cohort_z"]["semantic_coverage"]
    if base is not None:
        values["base_share"] = base[row["id"]]
    if setting != "none":
        found = row["neighbours"][setting]
        graded = np.array([shares[i] for i in found["ids"]])
        signals = None if base is None else np.array([base[i] for i in found["ids"]])
        values.update(
            neighbour_features(
                np.array(found["sims"]), graded, signals, k=k, temperature=temperature
            )
        )
    return values


def dev_rows(
    table: list[dict],
    datasets: tuple[str, ...],
    setting: str,
    base: dict[str, float] | None = None,
    k: int = DEFAULT_K,
    temperature: float = DEFAULT_TEMPERATURE,
) -> Rows:
    """The development rows evaluated in ``setting`` (graded answers themselves left out)."""
    chosen = [
        r
        for r in table
        if r["part"] == "dev"
        and r["dataset"] in datasets
        and (setting == "none" or setting in r["neighbours"])
    ]
    shares = {r["id"]: r["share"] for r in table}
    features = [row_features(r, setting, shares, base, k, temperature) for r in chosen]
    names = sorted({n for f in features for n in f})
    columns = {
        n: np.array([np.nan if f.get(n) is None else f[n] for f in features], dtype=float)
        for n in names
    }
    return Rows(
        setting=setting,
        rows=chosen,
        columns=columns,
        share=np.array([r["share"] for r in chosen]),
        max_score=np.array([r["max_score"] for r in chosen]),
        groups=np.array([f"{r['dataset']}:{r['question_id']}" for r in chosen]),
        dataset=np.array([r["dataset"] for r in chosen]),
    )
