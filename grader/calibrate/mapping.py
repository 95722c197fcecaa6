"""Per-question score mapping: judge points -> the instructor's points, learned on the sample.

A judge can be consistently harsh on one question and lenient on another while still ranking
answers well. An isotonic (monotone) fit of the instructor's scores on the judge's keeps the
judge's ranking and moves its scale onto the instructor's. Whether that helps is measured by
k-fold cross-validation (fit on k−1 folds, score the held-out one), so the instructor sees the
agreement the mapping would give on answers it has not seen, next to the raw agreement.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import KFold

from grader.calibrate.metrics import Agreement, agreement
from grader.calibrate.tables import ScorePair, question_order
from grader.errors import CalibrationError
from grader.models import Grade, MappingUsed, TrailStep

MIN_PAIRS = 5  # fewer answers on a question: leave its scores as the judge gave them


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class QuestionMapping(_Model):
    """A monotone step-and-ramp function, stored as the knots IsotonicRegression learned."""

    question_id: str
    max_score: float
    step: float = Field(ge=0, description="Mapped scores are rounded to this step; 0: not at all.")
    judge_points: list[float] = Field(min_length=1, description="Knots, increasing.")
    human_points: list[float] = Field(min_length=1, description="Instructor's points at the knots.")
    n: int = Field(description="Answers it was learned on.")

    def map(self, scores: Iterable[float]) -> np.ndarray:
        # Linear interpolation between the knots, constant beyond them: what
        # IsotonicRegression.predict does with out_of_bounds="clip".
        mapped = np.interp(
            np.asarray(list(scores), dtype=float), self.judge_points, self.human_points
        )
        if self.step:
            mapped = np.floor(mapped / self.step + 0.5) * self.step
        return np.clip(mapped, 0, self.max_score)


class ScoreMapping(_Model):
    method: Literal["isotonic"] = "isotonic"
    questions: dict[str, QuestionMapping]
    skipped: dict[str, str] = Field(
        default_factory=dict, description="Question id -> why it has no mapping."
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def version(self) -> str:
        content = self.model_dump(mode="json", exclude={"version"})
        return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:12]


class MappingCheck(_Model):
    """Cross-validated agreement without and with the mapping, on one question or all."""

    question_id: str | None = Field(description="None: all questions together.")
    folds: int
    mapped: bool = Field(description="False when too few answers to learn a mapping.")
    raw: Agreement
    with_mapping: Agreement


def scale_step(scores: Iterable[float]) -> float:
    """The instructor's resolution: whole points, half points, or none (0)."""
    values = np.asarray(list(scores), dtype=float)
    for step in (1.0, 0.5):
        if np.allclose(values / step, np.round(values / step)):
            return step
    return 0.0


def fit_question(pairs: list[ScorePair], step: float | None = None) -> QuestionMapping:
    max_score = pairs[0].max_score
    model = IsotonicRegression(y_min=0, y_max=max_score, increasing=True, out_of_bounds="clip")
    model.fit([p.judge for p in pairs], [p.human for p in pairs])
    return QuestionMapping(
        question_id=pairs[0].question_id,
        max_score=max_score,
        step=scale_step(p.human for p in pairs) if step is None else step,
        judge_points=[float(x) for x in model.X_thresholds_],
        human_points=[float(y) for y in model.y_thresholds_],
        n=len(pairs),
    )


def fit_mapping(
    pairs: list[ScorePair],
    *,
    min_pairs: int = MIN_PAIRS,
    checks: list[MappingCheck] | None = None,
) -> ScoreMapping:
    """One mapping per question with at least ``min_pairs`` answers scored by both.

    With ``checks`` (from ``cross_validate``), a question whose held-out mean absolute error
    gets worse with the mapping keeps the judge's scores: the fit follows the mean of the
    instructor's scores, which on a skewed question can miss the score they usually give.
    """
    worse = {
        c.question_id: c
        for c in checks or []
        if c.question_id is not None
        and c.mapped
        and c.raw.mae.value is not None
        and c.with_mapping.mae.value is not None
        and c.with_mapping.mae.value > c.raw.mae.value
    }
    questions, skipped = {}, {}
    for qid, items in _by_question(pairs).items():
        if len(items) < min_pairs:
            skipped[qid] = f"{len(items)} answer(s) scored by both; a mapping needs {min_pairs}"
        elif qid in worse:
            check = worse[qid]
            skipped[qid] = (
                f"cross-validated MAE worse with the mapping "
                f"({check.with_mapping.mae.value:.3f} vs {check.raw.mae.value:.3f})"
            )
        else:
            questions[qid] = fit_question(items)
    return ScoreMapping(questions=questions, skipped=skipped)


def cross_validate(
    pairs: list[ScorePair], *, folds: int = 5, seed: int = 0, min_pairs: int = MIN_PAIRS
) -> list[MappingCheck]:
    """Held-out agreement, raw vs mapped: all questions pooled first, then each question."""
    checks = []
    pooled_raw: list[float] = []
    pooled_mapped: list[float] = []
    pooled_human: list[float] = []
    for qid, items in _by_question(pairs).items():
        judge = np.array([p.judge for p in items])
        human = np.array([p.human for p in items])
        mapped = judge.copy()
        k = min(folds, len(items))
        if len(items) >= min_pairs:
            step = scale_step(human)
            splits = KFold(n_splits=k, shuffle=True, random_state=seed).split(items)
            for train, test in splits:
                mapping = fit_question([items[i] for i in train], step=step)
                mapped[test] = mapping.map(judge[test])
        max_score = items[0].max_score
        checks.append(
            MappingCheck(
                question_id=qid,
                folds=k,
                mapped=len(items) >= min_pairs,
                raw=agreement(human.tolist(), judge.tolist(), max_score, bootstrap=0),
                with_mapping=agreement(human.tolist(), mapped.tolist(), max_score, bootstrap=0),
            )
        )
        pooled_raw.extend(judge.tolist())
        pooled_mapped.extend(mapped.tolist())
        pooled_human.extend(human.tolist())
    top = max((p.max_score for p in pairs), default=0.0)
    overall = MappingCheck(
        question_id=None,
        folds=folds,
        mapped=any(c.mapped for c in checks),
        raw=agreement(pooled_human, pooled_raw, top, bootstrap=0),
        with_mapping=agreement(pooled_human, pooled_mapped, top, bootstrap=0),
    )
    return [overall, *checks]


def apply_mapping(grades: Iterable[Grade], mapping: ScoreMapping, source: str) -> list[Grade]:
    """Grades with mapped scores; the judge's own score stays in ``details.raw_score``.

    Criterion points are left as the judge gave them: they explain the raw score.
    """
    out = []
    for grade in grades:
        question = mapping.questions.get(grade.question_id)
        if question is None or grade.score is None:
            out.append(grade)
            continue
        if grade.provenance.score_mapping is not None:
            raise CalibrationError(
                f"grade {grade.submission_id!r} is already mapped; map the judge's own grades"
            )
        if grade.max_score is not None and abs(grade.max_score - question.max_score) > 1e-9:
            raise CalibrationError(
                f"grade {grade.submission_id!r} is out of {grade.max_score:g} points, the "
                f"mapping for {grade.question_id!r} was learned on {question.max_score:g}"
            )
        mapped = grade.model_copy(deep=True)
        mapped.score = float(question.map([grade.score])[0])
        mapped.details.raw_score = grade.score
        mapped.provenance.score_mapping = MappingUsed(
            method=mapping.method, version=mapping.version, source=source, learned_on=question.n
        )
        why = f"the score mapping learned on {question.n} graded answers ({mapping.method})"
        out.append(mapped.moved(TrailStep.MAPPING, grade.score, why))
    return out


def save_mapping(mapping: ScoreMapping, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(mapping.model_dump_json(indent=1), encoding="utf-8")


def load_mapping(path: Path) -> ScoreMapping:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CalibrationError(f"cannot read mapping: {exc.strerror}", file=path) from exc
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"invalid JSON: {exc.msg}", file=path, line=exc.lineno) from exc
    if isinstance(data, dict):
        data.pop("version", None)  # derived from the content
    try:
        return ScoreMapping.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise CalibrationError(f"{where}: {first['msg']}", file=path) from exc


def _by_question(pairs: list[ScorePair]) -> dict[str, list[ScorePair]]:
    grouped: dict[str, list[ScorePair]] = defaultdict(list)
    for pair in pairs:
        grouped[pair.question_id].append(pair)
    return dict(sorted(grouped.items(), key=lambda kv: question_order(kv[0])))
