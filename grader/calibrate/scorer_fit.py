"""Fitting the scorer's models on human grades (scikit-learn), for the shipped default and for
an instructor's refit (``grader calibrate fit``).

The engine only reads the fitted numbers (``grader.engine.scoring.scorer_model``); fitting lives here, on
the calibration floor, with the other code that learns from an instructor's scores.
``fit_default`` is the whole procedure behind ``grader/engine/scoring/scorer_default.json``: from
table rows (``scorer_rows``) to a scorer file with both stages and its confidence models;
``tests/unit/test_scorer_default.py`` checks that the shipped file is its output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Literal

import numpy as np

from grader.calibrate.scorer_cv import Graded, cv_grades, oof_base
from grader.calibrate.scorer_rows import GradedSetting, ScorerRow, copies, setting_features
from grader.engine.scoring.confidence import uncertainty_signals
from grader.engine.scoring.points import to_points
from grader.engine.scoring.scorer_model import (
    JUDGE_FEATURES,
    AnswerFeatures,
    Confidence,
    Scorer,
    ScorerSet,
)


def fit_ridge(
    x: np.ndarray,
    y: np.ndarray,
    features: Sequence[str],
    *,
    alpha: float = 1.0,
    positive: bool = False,
) -> Scorer:
    """Least squares with an L2 penalty on standardised features (scikit-learn's Ridge);
    ``positive``: no weight below 0, so every signal can only push a score up — what the
    grade's explanation tells an instructor about the first stage."""
    from sklearn.linear_model import Ridge

    x = np.asarray(x, dtype=float)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0  # a constant feature contributes nothing, instead of dividing by 0
    model = Ridge(alpha=alpha, positive=positive).fit(
        (x - mean) / scale, np.asarray(y, dtype=float)
    )
    return Scorer(
        kind="ridge",
        features=list(features),
        mean=mean.tolist(),
        scale=scale.tolist(),
        coef=model.coef_.tolist(),
        intercept=float(model.intercept_),
    )


def fit_isotonic(x: np.ndarray, y: np.ndarray, feature: str) -> Scorer:
    """A monotone step-and-ramp curve from one feature to the share (scikit-learn's Isotonic)."""
    from sklearn.isotonic import IsotonicRegression

    values = np.asarray(x, dtype=float).reshape(-1)
    model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(values, y)
    return Scorer(
        kind="isotonic",
        features=[feature],
        x=model.X_thresholds_.tolist(),
        y=model.y_thresholds_.tolist(),
    )


def fit_confidence(x: np.ndarray, within: np.ndarray, features: Sequence[str]) -> Confidence:
    """Fit on the signals of answers with cross-validated grades and whether each was within
    a quarter of the points (``within``: 1 or 0)."""
    from sklearn.linear_model import LogisticRegression

    x = np.asarray(x, dtype=float)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    # Converged tightly: a refit on the same rows gives the same 6 significant digits.
    model = LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000).fit(
        (x - mean) / scale, np.asarray(within, dtype=int)
    )
    return Confidence(
        features=list(features),
        mean=mean.tolist(),
        scale=scale.tolist(),
        coef=model.coef_[0].tolist(),
        intercept=float(model.intercept_[0]),
    )


@dataclass(frozen=True)
class Spec:
    """One model to fit: its name, features and kind, the languages it serves (empty: all),
    the graded answers a second-stage band needs, and ``positive``: no weight below 0."""

    name: str
    features: tuple[str, ...]
    kind: Literal["ridge", "isotonic"] = "ridge"
    languages: tuple[str, ...] = ()
    min_graded: int = 0
    positive: bool = False

    @classmethod
    def of(cls, scorer: Scorer, positive: bool = False) -> Spec:
        """The spec of a fitted scorer: a refit fits the same model on new rows."""
        return cls(
            scorer.name,
            tuple(scorer.features),
            scorer.kind,
            tuple(scorer.languages),
            scorer.min_graded,
            positive,
        )


def fit_model(
    spec: Spec,
    examples: Sequence[tuple[ScorerRow, AnswerFeatures]],
    describe: Callable[[list[ScorerRow]], dict[str, object]],
    min_rows: int = 1,
) -> Scorer | None:
    """``spec`` fit on the examples (a row and its features as the scorer reads them) that it
    serves: every feature, the language; the target is the row's human share. None with fewer
    than ``min_rows`` such examples. ``describe``: the ``trained_on`` of the rows it used.
    The default fit and an instructor's refit fit every model here."""
    usable = [
        (row, features)
        for row, features in examples
        if features.has(spec.features)
        and (not spec.languages or features.language in spec.languages)
    ]
    if not usable or len(usable) < min_rows:
        return None
    x = np.array([f.vector(spec.features) for _, f in usable])
    y = np.array([row.share for row, _ in usable])
    fitted = (
        fit_ridge(x, y, spec.features, positive=spec.positive)
        if spec.kind == "ridge"
        else fit_isotonic(x, y, spec.features[0])
    )
    update = {
        "name": spec.name,
        "languages": list(spec.languages),
        "min_graded": spec.min_graded,
        "trained_on": describe([row for row, _ in usable]),
    }
    return fitted.model_copy(update=update)


def trained_on(rows: Sequence[ScorerRow], **extra: object) -> dict[str, object]:
    """What a model was fit on, for its file: the data sets and parts (an instructor's grades
    when the rows name none), how many answers and questions, and ``extra``."""
    parts = sorted({f"{r.dataset} {r.part}".strip() for r in rows} - {""})
    return {
        "data": " + ".join(parts) or "an instructor's grades of this exam",
        "answers": len(rows),
        "questions": len({r.question for r in rows}),
        **extra,
    }


# --- the default scorer ----------------------------------------------------------------------

# Stage 1: the answer's own signals. Every weight positive, so each feature's push can be shown
# to an instructor (docs/research/benchmarks-log.md, "The calibrated scorer": the designs
# tried). Nothing here reads the other answers of the run: the cohort z-score did, and a
# score depended on who shared the run (docs/research/benchmarks-log.md, what it cost).
EXPLAINABLE = ("reference_margin", "semantic_coverage", "ngram_coverage", "length_log_ratio")
STAGE1 = (("signals", EXPLAINABLE),)
STAGE2 = ("base_share", "knn_residual", "graded_residual")
WORDING = (*STAGE2, "wording_residual")  # grader.engine.scoring.wording
# Stage 2 per band of graded answers (setting that gives it its rows, fewest graded answers,
# features); from 10 graded answers on, the wording model's residual too
# (scorer_wording, docs/research/explorations.md).
BANDS = (
    (GradedSetting.ALL_OTHER, 20, WORDING),
    (GradedSetting.GRADED10, 10, WORDING),
    (GradedSetting.GRADED5, 5, STAGE2),
)
SETTINGS = tuple(GradedSetting)
# Confidence models, the first whose signals a grade has (with graded answers, then without).
DOUBT = ("middle", "coverage_gap", "novelty")
GRADED_DOUBT = (*DOUBT, "knn_spread", "neighbour_gap", "correction", "distance")
JUDGE_DOUBT = ("judge_entropy", "judge_gap")
CONFIDENCE = (("graded", GRADED_DOUBT), ("signals", DOUBT))
LARGE_ERROR = 0.25  # of the points: the grades review should catch


@dataclass(frozen=True)
class ScorerDesign:
    """What ``fit_default`` fits: stage-1 feature sets, stage-2 bands, confidence models;
    ``languages``: stage-1 scorers fit on (and serving) some languages only, by name."""

    stage1: tuple[tuple[str, tuple[str, ...]], ...] = STAGE1
    bands: tuple[tuple[str, int, tuple[str, ...]], ...] = BANDS
    confidence: tuple[tuple[str, tuple[str, ...]], ...] = CONFIDENCE
    languages: tuple[tuple[str, tuple[str, ...]], ...] = ()


def with_judge(
    design: ScorerDesign, judged: Sequence[str] = JUDGE_FEATURES, languages: Sequence[str] = ()
) -> ScorerDesign:
    """``design`` with a stage-1 scorer that also reads the judge first (answers the judge
    read, in ``languages`` when given), the signals-only ones after it (answers without a
    reading or in another language, graded neighbours), and confidence models that also read
    the judge's doubt."""
    name, names = design.stage1[0]
    first = (f"judge+{name}", (*names, *judged))
    return replace(
        design,
        stage1=(first, *design.stage1),
        languages=((first[0], tuple(languages)),) if languages else (),
        confidence=(
            ("graded+judge", (*GRADED_DOUBT, *JUDGE_DOUBT)),
            ("graded", GRADED_DOUBT),
            ("judge", (*DOUBT, *JUDGE_DOUBT)),
            ("signals", DOUBT),
        ),
    )


# What ships (docs/research/benchmarks-log.md, "The calibrated scorer": why): the judge's reading is
# weighed for English answers, where it added on development data; Chinese answers are scored
# from the signals (on ADS development answers the judge's reading lowered the Pearson).
SHIPPED = with_judge(ScorerDesign(), languages=("en",))


def fit_default(rows: Sequence[ScorerRow], design: ScorerDesign = SHIPPED) -> ScorerSet:
    """The scorer file from human-scored rows (the shipped one: Mohler dev + ADS dev).

    Stage 1: one ridge per feature set on the rows production's scorer grades (no rule).
    Stage 2: per band, a ridge on (stage-1 share, neighbours' residual, question's residual,
    and from 10 graded answers on the wording model's residual), the residuals from
    out-of-fold stage-1 shares. Confidence: logistic models of "within a
    quarter of the points" on out-of-fold grades of the whole procedure (``cv_grades``).
    """
    rows = list(rows)
    scorers = fit_stages(rows, design)
    graded = cv_grades(rows, lambda train: fit_stages(train, design), SETTINGS)
    models = fit_confidences(graded, scorers, design.confidence)
    return scorers.model_copy(update={"confidence": models})


def fit_first_stage(rows: Sequence[ScorerRow], design: ScorerDesign) -> list[Scorer]:
    """One non-negative ridge per stage-1 feature set, on the scored rows that have its
    features (and its language, where it serves some only)."""
    scored = [(r, r.own_features()) for r in rows if r.rule is None]
    fitted = [
        fit_model(
            Spec(name, names, languages=dict(design.languages).get(name, ()), positive=True),
            scored,
            lambda used: trained_on(used, setting=GradedSetting.NONE),
        )
        for name, names in design.stage1
    ]
    return [s for s in fitted if s is not None]


def fit_stages(rows: Sequence[ScorerRow], design: ScorerDesign) -> ScorerSet:
    """Both stages, without the confidence models."""
    signals = fit_first_stage(rows, design)
    plain, own = oof_base(rows, lambda train: fit_first_stage(train, design))
    shares = {r.id: r.share for r in rows}
    texts = {r.id: r.answer for r in rows}
    graded = []
    for setting, band, names in design.bands:
        read = texts if "wording_residual" in names else None
        examples = [
            (row, setting_features(row, setting, shares, plain, own[row.id], texts=read))
            for row in rows
            # the copy rule grades an answer whose text was graded
            if row.scored_in(setting) and not copies(row, setting, shares)
        ]
        spec = Spec(f"graded{band}+", names, min_graded=band)
        scorer = fit_model(spec, examples, partial(trained_on, setting=setting))
        if scorer is not None:
            graded.append(scorer)
    return ScorerSet(first_stage=signals, bands=graded)


def uncertainty_row(graded: Graded, scorers: ScorerSet) -> dict[str, float | None]:
    """A grade's uncertainty signals, read as production reads them (``scorer_confidence``)."""
    features = scorers.usable(graded.features)
    stage1 = next(s for s in scorers.first_stage if s.serves(features))
    return uncertainty_signals(graded.share, features, stage1)


def large_error(graded: Graded) -> bool:
    """The grade, in half points as production gives it, a quarter of the points off."""
    row = graded.row
    off = abs(to_points(graded.share, row.points) - row.share * row.points)
    return off >= LARGE_ERROR * row.points - 1e-9


def fit_confidences(
    graded: Sequence[Graded], scorers: ScorerSet, specs: Sequence[tuple[str, tuple[str, ...]]]
) -> list[Confidence]:
    """One logistic model per spec, each on the grades production would route to it (the
    first spec whose signals the grade has)."""
    routed: dict[str, list[tuple[list[float], bool]]] = {name: [] for name, _ in specs}
    for g in graded:
        values = uncertainty_row(g, scorers)
        for name, names in specs:
            row = [float(v) for v in (values.get(n) for n in names) if v is not None]
            if len(row) == len(names):  # the grade has every signal the model reads
                routed[name].append((row, not large_error(g)))
                break
    models = []
    for name, names in specs:
        found = routed[name]
        if len({within for _, within in found}) < 2:
            continue  # every grade right (or wrong): nothing to learn
        x = np.array([v for v, _ in found])
        model = fit_confidence(x, np.array([w for _, w in found], dtype=int), names)
        models.append(model.model_copy(update={"name": name}))
    return models
