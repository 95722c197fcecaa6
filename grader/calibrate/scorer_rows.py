"""The scorer's training rows: one human-scored answer with every number the fit reads.

A row holds what production computes for the answer (``grader.engine.scoring.features.
answer_features``), the judge's reading when the judge ran, whether a rule scores it without
the scorer (blank, non-answer, off-topic: production gives 0), and, per setting of graded
answers (say "5 graded per question"), the graded answers that may be its neighbours with
their cosines, and the graded answers with its very text (the copy rule). The neighbour
features then come from ``grader.engine.scoring.scorer_model.neighbour_features``, the function the engine's
``GradedPool`` calls, with the graded answers' human shares and their stage-1 shares.

The default scorer's table is ``benchmarks/results/scorer_features.jsonl.gz`` (with each
answer's text, which the wording model of the graded answers reads);
``grader.calibrate.scorer_fit.fit_default`` fits the shipped file from its development rows.
An instructor's refit reads the same rows from the grades (``refit_rows.refit_row``): the
features the grade recorded, the instructor's score, the grade's score as it stands; its
neighbours come from the answers' vectors (``scorer_core.pool``), not from a table.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from grader.engine.scoring.scorer_core.inputs import Copy, ScorerInput
from grader.engine.scoring.scorer_model import (
    DEFAULT_K,
    DEFAULT_TEMPERATURE,
    AnswerFeatures,
    neighbour_features,
)
from grader.engine.scoring.wording import wording_residual
from grader.models import ReviewCode


class GradedSetting(StrEnum):
    """How many of a question's answers are human-graded when the default scorer is fit and
    evaluated: none (every row is evaluated), 5 or 10 per question, or all the others. A
    setting is a key of ``ScorerRow.neighbours``; benchmarks add others (``graded20``, ...)."""

    NONE = "none"
    GRADED5 = "graded5"
    GRADED10 = "graded10"
    ALL_OTHER = "all_other"


class Neighbours(BaseModel):
    """A row's graded answers in one setting: never itself; its text's copies apart."""

    model_config = ConfigDict(extra="forbid")

    ids: list[str] = Field(default_factory=list, description="may be neighbours, nearest first")
    sims: list[float] = Field(default_factory=list, description="their cosines to the answer")
    identical: list[str] = Field(default_factory=list, description="graded with the same text")


class JudgeSeen(BaseModel):
    """The judge's reading of the answer (``features.judge_reading``)."""

    model_config = ConfigDict(extra="forbid")

    share: float
    entropy: float | None = None
    score: float | None = Field(None, description="the judge's grade, without the scorer")


class ScorerRow(BaseModel):
    """One human-scored answer as the scorer's fit and evaluation see it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    question: str = Field(description="group key: answers of one question stay in one fold")
    pool: str | None = Field(
        None, description="whose graded answers are its neighbours; None: its question's"
    )
    dataset: str = ""
    part: str = Field(
        "", description="dev / test (benchmarks/lib/splits.py); '' for an instructor's"
    )
    share: float = Field(ge=0, le=1, description="the human score over the points")
    points: float = Field(gt=0)
    answer: str | None = Field(None, description="the text: the graded answers' wording model")
    rule: ReviewCode | None = Field(
        None, description="scored 0 by a rule (blank, off_topic), no scorer"
    )
    features: AnswerFeatures = Field(description="answer_features, without the judge")
    judge: JudgeSeen | None = None
    neighbours: dict[str, Neighbours] = Field(
        default_factory=dict, description="by setting; absent: graded (not scored) there"
    )
    human: float | None = Field(None, ge=0, description="an instructor's score, in points")
    current: float | None = Field(None, description="the grade's score as it stands (a refit's)")

    def scored_in(self, setting: str) -> bool:
        """Production's scorer grades this answer in ``setting`` (no rule, not graded)."""
        return self.rule is None and (setting == GradedSetting.NONE or setting in self.neighbours)

    def human_points(self) -> float:
        """``human``, which every row of an instructor's refit carries (``refit_row``)."""
        return _given(self.human, self.id, "instructor's score")

    def current_points(self) -> float:
        """``current``, which every row of an instructor's refit carries (``refit_row``)."""
        return _given(self.current, self.id, "current grade")

    def own_features(self) -> AnswerFeatures:
        """The features production gives the scorer for this answer: the judge's included."""
        if self.judge is None:
            return self.features
        return self.features.model_copy(
            update={"judge_share": self.judge.share, "judge_entropy": self.judge.entropy}
        )


def _given(value: float | None, row: str, what: str) -> float:
    if value is None:
        raise ValueError(f"row {row!r} has no {what}: not a refit's row")
    return value


def setting_features(
    row: ScorerRow,
    setting: str,
    shares: Mapping[str, float],
    base: Mapping[str, float] | None,
    own_base: float | None = None,
    *,
    texts: Mapping[str, str | None] | None = None,
    k: int = DEFAULT_K,
    temperature: float = DEFAULT_TEMPERATURE,
) -> AnswerFeatures:
    """The row's features in ``setting``: its own, the neighbour features from its graded
    answers' human ``shares`` and stage-1 ``base`` shares (as ``GradedPool`` computes them;
    no residuals without ``base``), the wording model's residual when the graded answers'
    ``texts`` are given (a fit per row: leave them out where no scorer reads it), and
    ``own_base`` as ``base_share`` when given (fitting stage 2). ``k`` and ``temperature``:
    the neighbour rule's (benchmarks try others)."""
    features = row.own_features()
    update: dict[str, float | None] = {}
    if setting != GradedSetting.NONE:
        found = row.neighbours[setting]
        update |= neighbour_features(
            np.array(found.sims, dtype=float),
            np.array([shares[i] for i in found.ids], dtype=float),
            None if base is None else np.array([base[i] for i in found.ids], dtype=float),
            k=k,
            temperature=temperature,
        )
        if texts is not None and base is not None:
            update["wording_residual"] = _wording(row, found, texts, shares, base)
    if own_base is not None:
        update["base_share"] = own_base
    return features.model_copy(update=update) if update else features


def _wording(
    row: ScorerRow,
    found: Neighbours,
    texts: Mapping[str, str | None],
    shares: Mapping[str, float],
    base: Mapping[str, float],
) -> float | None:
    """The wording model's residual for the row, as ``GradedPool`` gives it; None without
    every text."""
    graded = [texts.get(i) for i in found.ids]
    if row.answer is None or any(t is None for t in graded):
        return None
    return wording_residual(
        [t for t in graded if t is not None],
        [shares[i] - base[i] for i in found.ids],
        row.answer,
        row.features.language,
    )


def copies(row: ScorerRow, setting: str, shares: Mapping[str, float]) -> tuple[Copy, ...]:
    """The graded answers with the row's very text in ``setting``, with their human shares
    (the table found them by ``scorer_core.rules.graded_split``)."""
    if setting == GradedSetting.NONE:
        return ()
    return tuple(Copy(i, shares[i]) for i in row.neighbours[setting].identical)


def reading(
    row: ScorerRow,
    setting: str,
    shares: Mapping[str, float],
    base: Mapping[str, float] | None,
    *,
    texts: Mapping[str, str | None] | None = None,
) -> ScorerInput:
    """The row as the scorer reads it in ``setting``: ``setting_features`` and its copies."""
    return ScorerInput(
        setting_features(row, setting, shares, base, texts=texts), copies(row, setting, shares)
    )


def read_rows(path: Path) -> list[ScorerRow]:
    """A gzipped JSONL table; a bad line fails naming the file and line."""
    rows = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            try:
                rows.append(ScorerRow.model_validate_json(line))
            except ValueError as exc:
                raise ValueError(f"{path}, line {number}: {exc}") from exc
    return rows


def write_rows(path: Path, rows: Iterable[ScorerRow]) -> None:
    """Deterministic bytes (gzip mtime 0, no None fields): the same rows, the same file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with (
        gzip.GzipFile(path, "wb", mtime=0) as raw,
        io.TextIOWrapper(raw, encoding="utf-8") as f,
    ):
        for row in rows:
            payload = row.model_dump(mode="json", exclude_none=True)
            f.write(json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n")
