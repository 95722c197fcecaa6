"""The calibrated scorer: an answer's signals in, one share of the question's points out.

No single signal is good enough (reference cosine, key-point coverage, the judge, the graded
answers nearest to this one); a small model weighs them, fit on human grades. Everything here
is a pure function over numbers, so grading, re-scoring and the fits share it as it is:

- ``AnswerFeatures``: the named inputs of one answer. ``grader.engine.scoring.features`` builds them
  from the pipeline's signals, ``neighbour_features`` from the graded answers of the same
  question. ``judge_share`` and ``judge_entropy`` are the judge's slots, filled
  when the judge ran; a scorer that names them needs them. ``language`` (the question's) picks
  among scorers fit on some languages only: the shipped one weighs the judge on English
  answers, and ``ScorerSet.usable`` drops a reading no scorer weighs for the language.
- ``fit_ridge`` / ``fit_isotonic`` → ``Scorer`` (pydantic, a few hundred bytes as JSON);
  ``predict`` gives shares clipped to [0, 1]; ``contributions`` shows how much each feature
  moved one answer's score away from the average answer's, for the instructor.
- ``to_json`` / ``from_json``: the file, with ``version`` = a hash of its content, which goes
  into every grade's provenance. ``ScorerSet`` holds the two stages: ``first_stage`` scorers
  (the first whose features an answer has) and, when the question has graded answers,
  ``bands``: a scorer per count of graded answers that corrects the first stage's share by how
  the nearest graded answers' marks differ from it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from grader.errors import ConfigError

SCHEMA = 1

# Every feature a scorer may name, in a fixed order (the JSON lists its own subset).
FEATURE_NAMES = (
    "reference_cosine",  # max cosine over the references
    "reference_margin",  # ... minus how close unrelated text in the answer's language gets
    "topic_margin",  # grader.signals: above unrelated text, near question and reference
    "peer_margin",  # above unrelated text near the classmates: reads the run, so unscored
    "semantic_coverage",  # grader.signals coverage_points / points
    "ngram_coverage",  # grader.coverage coverage_points / points
    "length_log_ratio",  # log((1 + answer chars) / (1 + reference chars))
    "cohort_reference_z",  # reference_margin's z-score in the run: no longer computed
    "cohort_coverage_z",  # semantic_coverage's z-score in the run: no longer computed
    "knn_share",  # similarity-weighted share of the k nearest graded answers
    "knn_top_similarity",  # cosine of the nearest graded answer
    "knn_spread",  # weighted standard deviation of those k shares
    "graded_mean",  # mean share of all graded answers of the question
    "base_share",  # the first-stage scorer's share for this answer (stage 1)
    "knn_residual",  # weighted (human − first stage) of the k nearest graded answers
    "graded_residual",  # mean (human − first stage) over all graded answers
    "wording_residual",  # (human − first stage) predicted from the graded answers' wording
    "graded_count",  # how many graded answers of the question could be neighbours
    "judge_share",  # the judge's expected points / points, when it ran
    "judge_entropy",  # entropy of the judge's level distribution, normalised to [0, 1]
)

# The neighbour rule, chosen on development data (docs/research/benchmarks-log.md, "The scorer").
DEFAULT_K = 5
DEFAULT_TEMPERATURE = 0.02


class AnswerFeatures(BaseModel):
    """The scorer's inputs for one answer; ``None``: the signal was not available."""

    model_config = ConfigDict(extra="forbid")

    reference_cosine: float | None = None
    reference_margin: float | None = None
    topic_margin: float | None = None
    peer_margin: float | None = None
    semantic_coverage: float | None = None
    ngram_coverage: float | None = None
    length_log_ratio: float | None = None
    cohort_reference_z: float | None = None
    cohort_coverage_z: float | None = None
    knn_share: float | None = None
    knn_top_similarity: float | None = None
    knn_spread: float | None = None
    graded_mean: float | None = None
    base_share: float | None = None
    knn_residual: float | None = None
    graded_residual: float | None = None
    wording_residual: float | None = None
    graded_count: int | None = None
    judge_share: float | None = None
    judge_entropy: float | None = None
    language: Literal["zh", "en"] | None = Field(
        None, description="the question's language: a scorer fit on some languages serves those"
    )

    def has(self, names: Sequence[str]) -> bool:
        return all(getattr(self, n) is not None for n in names)

    def numbers(self) -> dict[str, float | int | None]:
        """Every numeric feature by name (``FEATURE_NAMES``): the answer without its language."""
        return {n: getattr(self, n) for n in FEATURE_NAMES}

    def vector(self, names: Sequence[str]) -> np.ndarray:
        missing = [n for n in names if getattr(self, n) is None]
        if missing:
            raise ValueError(f"answer lacks the scorer's features: {', '.join(missing)}")
        return np.array([getattr(self, n) for n in names], dtype=float)


JUDGE_FEATURES = ("judge_share", "judge_entropy")
NEIGHBOUR_FEATURES = (
    "knn_share", "knn_top_similarity", "knn_spread", "graded_mean", "knn_residual",
    "graded_residual", "wording_residual", "graded_count",
)  # fmt: skip


def neighbour_features(
    similarities: np.ndarray,
    shares: np.ndarray,
    base: np.ndarray | None = None,
    *,
    k: int = DEFAULT_K,
    temperature: float = DEFAULT_TEMPERATURE,
) -> dict[str, float | None]:
    """What the graded answers of the question say about one answer.

    ``similarities``, ``shares`` and ``base`` are, for each graded answer the caller allows
    (never the answer itself nor a copy of its text: ``scorer_core.rules.graded_split``),
    its cosine to the answer, its human share and the first-stage scorer's share for it. The k
    nearest are weighted by softmax(cosine / temperature): e5 cosines are compressed, so a plain
    cosine weight would treat a 0.95 and a 0.85 neighbour nearly alike. The residuals (human −
    first stage) say how far the instructor's marks sit from what the signals alone would give, near this
    answer and over the whole question; without ``base`` they are None.
    """
    sims = np.asarray(similarities, dtype=float)
    values = np.asarray(shares, dtype=float)
    if sims.shape != values.shape or sims.ndim != 1:
        raise ValueError("similarities and shares must be two 1-D arrays of the same length")
    if base is not None and np.shape(base) != sims.shape:
        raise ValueError("one first-stage share per graded answer")
    out: dict[str, float | None] = dict.fromkeys(NEIGHBOUR_FEATURES)
    if len(sims) == 0:
        return out
    nearest = np.argsort(-sims, kind="stable")[:k]
    weights = np.exp((sims[nearest] - sims[nearest[0]]) / temperature)
    weights /= weights.sum()
    share = float(weights @ values[nearest])
    out |= {
        "graded_count": len(sims),
        "knn_share": share,
        "knn_top_similarity": float(sims[nearest[0]]),
        "knn_spread": float(math.sqrt(max(0.0, weights @ (values[nearest] - share) ** 2))),
        "graded_mean": float(values.mean()),
    }
    if base is not None:
        residuals = values - np.asarray(base, dtype=float)
        out["knn_residual"] = float(weights @ residuals[nearest])
        out["graded_residual"] = float(residuals.mean())
    return out


# --- the model -------------------------------------------------------------------------------


class Scorer(BaseModel):
    """A fitted scorer: ``ridge`` (standardised linear) or ``isotonic`` (one feature)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_version: int = Field(SCHEMA, alias="schema")
    name: str = Field("default", description="which setting it serves, e.g. 'graded'")
    min_graded: int = Field(0, ge=0, description="serves questions with this many graded answers")
    kind: Literal["ridge", "isotonic"]
    features: list[str] = Field(min_length=1)
    # ridge: share = intercept + Σ coef · (x − mean) / scale
    mean: list[float] = Field(default_factory=list)
    scale: list[float] = Field(default_factory=list)
    coef: list[float] = Field(default_factory=list)
    intercept: float = 0.0
    # isotonic: share = linear interpolation over (x, y), flat beyond the ends
    x: list[float] = Field(default_factory=list)
    y: list[float] = Field(default_factory=list)
    languages: list[Literal["zh", "en"]] = Field(
        default_factory=list,
        description="serves answers in these languages only (a judge's reading means what it "
        "was fit on); empty: every language",
    )
    trained_on: dict[str, object] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Scorer:
        unknown = [f for f in self.features if f not in FEATURE_NAMES]
        if unknown:
            raise ValueError(f"unknown features: {', '.join(unknown)}")
        if self.schema_version != SCHEMA:
            raise ValueError(f"scorer schema {self.schema_version}, this code reads {SCHEMA}")
        if self.kind == "ridge":
            width = len(self.features)
            if not len(self.mean) == len(self.scale) == len(self.coef) == width:
                raise ValueError("ridge: mean, scale and coef need one value per feature")
            if any(s <= 0 for s in self.scale):
                raise ValueError("ridge: every scale must be > 0")
        else:
            if len(self.features) != 1:
                raise ValueError("isotonic: exactly one feature")
            if len(self.x) != len(self.y) or not self.x:
                raise ValueError("isotonic: x and y need the same, non-zero length")
            if any(b < a for a, b in zip(self.x, self.x[1:], strict=False)):
                raise ValueError("isotonic: x must be sorted")
        return self

    def serves(self, features: AnswerFeatures) -> bool:
        """Whether this scorer grades the answer: it has every feature and the language."""
        return features.has(self.features) and (
            not self.languages or features.language in self.languages
        )


def predict(scorer: Scorer, x: np.ndarray) -> np.ndarray:
    """Shares in [0, 1] for the rows of ``x`` (columns in ``scorer.features`` order)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    if x.shape[1] != len(scorer.features):
        raise ValueError(f"expected {len(scorer.features)} feature columns, got {x.shape[1]}")
    if scorer.kind == "isotonic":
        raw = np.interp(x[:, 0], scorer.x, scorer.y)
    else:
        raw = scorer.intercept + _standardised(scorer, x) @ np.asarray(scorer.coef)
    shares: np.ndarray = np.clip(raw, 0.0, 1.0)
    return shares


def contributions(scorer: Scorer, features: AnswerFeatures) -> dict[str, float]:
    """Ridge only: each feature's push on the share, from the training data's average answer
    (``intercept``); the pushes and the intercept add up to the unclipped share."""
    if scorer.kind != "ridge":
        raise ValueError("contributions are defined for the linear (ridge) scorer")
    row = _standardised(scorer, features.vector(scorer.features)[None, :])[0]
    return {
        name: float(c * v) for name, c, v in zip(scorer.features, scorer.coef, row, strict=True)
    }


def _standardised(scorer: Scorer, x: np.ndarray) -> np.ndarray:
    z: np.ndarray = (x - np.asarray(scorer.mean)) / np.asarray(scorer.scale)
    return z


class Confidence(BaseModel):
    """Logistic model: P(grade within a quarter of the points) from uncertainty signals."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("default", description="which grades it serves, e.g. 'graded'")
    features: list[str] = Field(min_length=1)
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float


# --- the file --------------------------------------------------------------------------------


class ScorerSet(BaseModel):
    """The shipped file: first-stage scorers in order of preference, then the bands for
    questions with graded answers.

    Stage 1: the first of ``first_stage`` whose features the answer has gives ``base_share``.
    Stage 2, when the question has graded answers: the band of ``bands`` with the largest
    ``min_graded`` the question reaches maps ``base_share`` and the neighbours' residuals to
    the final share (the more graded answers, the more the neighbours are trusted). The file
    keeps its first keys, ``signals`` and ``graded`` (the aliases), so every scorer file
    written before reads the same.
    """

    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )

    first_stage: list[Scorer] = Field(min_length=1, alias="signals")
    bands: list[Scorer] = Field(default_factory=list, alias="graded")
    confidence: list[Confidence] = Field(
        default_factory=list,
        description="P(a grade is within a quarter of the points): the first model whose "
        "signals a grade has (with graded neighbours, then without)",
    )
    version: str | None = None

    @model_validator(mode="after")
    def _stages(self) -> ScorerSet:
        for scorer in self.first_stage:
            used = set(scorer.features) & {"base_share", *NEIGHBOUR_FEATURES}
            if used:
                raise ValueError(
                    f"first-stage scorer {scorer.name!r} uses {', '.join(sorted(used))}"
                )
        bands = [g.min_graded for g in self.bands]
        if any(b < 1 for b in bands) or len(set(bands)) != len(bands):
            raise ValueError("bands need distinct min_graded values of at least 1")
        return self

    def weighs_judge(self, language: str | None) -> bool:
        """Whether a first-stage scorer weighs the judge's reading of answers in ``language``."""
        return any(
            set(JUDGE_FEATURES) & set(s.features) and (not s.languages or language in s.languages)
            for s in self.first_stage
        )

    def usable(self, features: AnswerFeatures) -> AnswerFeatures:
        """The features this scorer reads: the judge's reading only in a language it weighs
        the judge for, so the answer also takes the confidence model fit on such grades."""
        if features.judge_share is None or self.weighs_judge(features.language):
            return features
        return features.model_copy(update=dict.fromkeys(JUDGE_FEATURES))

    def base(self, features: AnswerFeatures) -> tuple[str, float]:
        """(the first-stage scorer's name, its share) for one answer."""
        features = self.usable(features)
        for scorer in self.first_stage:
            if scorer.serves(features):
                return scorer.name, float(predict(scorer, features.vector(scorer.features))[0])
        raise ValueError("no first-stage scorer serves this answer (its features, its language)")

    def score(self, features: AnswerFeatures) -> tuple[str, float]:
        """(the name of the scorer that decided, the share); ``base_share`` comes from stage 1."""
        name, share = self.base(features)
        band = self.band(features.graded_count)
        if band is None:
            return name, share
        staged = features.model_copy(update={"base_share": share})
        if not staged.has(band.features):
            return name, share
        return band.name, float(predict(band, staged.vector(band.features))[0])

    def band(self, graded_count: int | None) -> Scorer | None:
        """The second stage for an answer with this many graded answers beside it: the band
        with the largest ``min_graded`` it reaches; None: the first stage decides."""
        reached = [g for g in self.bands if g.min_graded <= (graded_count or 0)]
        return max(reached, key=lambda g: g.min_graded, default=None)


def content_version(payload: dict[str, Any]) -> str:
    """12 hex digits of sha256 over the canonical JSON without its ``version``: any change to a
    coefficient, threshold or feature name is a new version."""
    bare = {k: v for k, v in payload.items() if k != "version"}
    canonical = json.dumps(bare, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def to_json(scorers: ScorerSet) -> str:
    """The file's text; floats rounded to 6 significant digits so a refit on the same data
    gives the same bytes, ``version`` filled in."""
    dumped = scorers.model_dump(mode="json", by_alias=True, exclude={"version"})
    payload = {k: _rounded(v) for k, v in dumped.items()}
    payload["version"] = content_version(payload)
    return json.dumps(payload, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def from_json(text: str, source: str = "scorer file") -> ScorerSet:
    """Read a scorer file; a wrong or edited file fails naming the field (pydantic)."""
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: not JSON ({exc})") from exc
    scorers = ScorerSet.model_validate(payload)
    if payload.get("version") != content_version(payload):
        raise ValueError(f"{source}: version does not match the content (edited by hand?)")
    return scorers


def _rounded(value: object) -> object:
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


DEFAULT_FILE = Path(__file__).with_name("scorer_default.json")


def load_scorer(choice: str | Path) -> ScorerSet | None:
    """``"default"``: the scorer shipped with grader (fit on development data only,
    ``docs/research/benchmarks-log.md``); ``"none"``: no scorer, the judge's points stand; otherwise (and
    always for a ``Path``) a scorer file (``grader calibrate fit``). Grading chooses through
    ``scorer_choice.choose_scorer``."""
    if choice == "none":
        return None
    path = DEFAULT_FILE if choice == "default" else Path(choice)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the scorer file {path}: {exc}") from exc
    try:
        return from_json(text, str(path))
    except ValueError as exc:  # pydantic's ValidationError is one
        raise ConfigError(str(exc)) from exc
