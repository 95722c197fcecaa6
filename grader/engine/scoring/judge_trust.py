"""How far a judge model's own readings of criteria can be trusted, learned on graded answers.

A judge that reads answers well should decide their grades; one that says yes to everything
must not be able to raise any. Neither is a property of the answer's language: it is the
model's. ``fit`` compares a judge's own points per criterion (``details.judge_points``, before
any scorer) with an instructor's on the same answers, as a skill score against knowing only
each criterion's mean: ``trust = max(0, 1 − MAE(judge) / MAE(criterion mean))``. A judge no
better than the mean gets 0, a perfect reader 1. ``grader calibrate judge-trust`` fits it and
stores it under the model's name in a trust file (``GRADER_JUDGE_TRUST``; the shipped one
holds the embedded models' entries, measured on the development seed answers).

A judge's claim check (``judging.claim_check``: does the answer state this decisive part?) is
measured apart, per answer language: ``fit_claims`` takes the smallest margin at which the
parts it reads as stated were credited by the instructor (their criterion at least half its
points) ``CLAIM_PRECISION`` of the time. A model with no such margin in a language is not
asked there: the embedded 1.5B in either, as it states the true parts a fluent wrong answer
names too.
"""

from __future__ import annotations

import functools
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field

from grader.errors import ConfigError

SHIPPED = Path(__file__).with_name("judge_trust.json")
MIN_READINGS = 20  # criterion readings a fit needs
CLAIM_PRECISION = 0.9  # of the parts a judge states, the share an instructor must have credited
MIN_STATED = 10  # parts stated at a margin before its precision counts
MIN_CLAIM_READINGS = 50  # parts read in a language before a margin is fitted there
MARGINS = tuple(round(0.1 + 0.05 * i, 2) for i in range(11))  # 0.1 … 0.6, tried smallest first


class ClaimMargin(BaseModel):
    """Where a judge model's claim check states a part in answers of one language, or that it
    never does so precisely enough (``margin`` None: the most precise margin's figures)."""

    margin: float | None  # P(yes) above the empty answer's at which a part is stated
    at: float  # the margin the figures below were measured at
    precision: float  # of the parts stated there, the share the instructor credited
    stated: int
    readings: int  # parts read
    credited: float  # of all the parts read, the share the instructor credited
    data: str  # what it was fit on


class JudgeTrust(BaseModel):
    """One judge model's trust, and what it rests on."""

    model: str
    trust: float = Field(ge=0, le=1)
    readings: int  # criterion readings compared
    judge_mae: float  # mean |judge − instructor| per criterion, as a share of its points
    mean_mae: float  # the same for each criterion's mean instructor share
    data: str  # what it was fit on
    claims: dict[str, ClaimMargin] = Field(default_factory=dict)  # by answer language


def fit(model: str, readings: Iterable[tuple[str, float, float]], data: str) -> JudgeTrust:
    """``readings``: (criterion key, judge share, instructor share) per criterion read."""
    rows = list(readings)
    if len(rows) < MIN_READINGS:
        raise ValueError(f"{len(rows)} criterion readings; a fit needs {MIN_READINGS}")
    by_criterion: dict[str, list[float]] = defaultdict(list)
    for key, _, human in rows:
        by_criterion[key].append(human)
    means = {key: statistics.fmean(values) for key, values in by_criterion.items()}
    judge_mae = statistics.fmean(abs(j - h) for _, j, h in rows)
    mean_mae = statistics.fmean(abs(means[key] - h) for key, _, h in rows)
    trust = max(0.0, 1 - judge_mae / mean_mae) if mean_mae > 0 else 0.0
    return JudgeTrust(
        model=model,
        trust=round(min(1.0, trust), 3),
        readings=len(rows),
        judge_mae=round(judge_mae, 4),
        mean_mae=round(mean_mae, 4),
        data=data,
    )


def fit_claims(readings: Iterable[tuple[str, float, bool]], data: str) -> dict[str, ClaimMargin]:
    """``readings``: (answer language, the judge's gap, whether the instructor credited the
    part's criterion) per part asked: for each language, the smallest margin precise enough,
    or None with the most precise margin's figures."""
    by_language: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for language, gap, credited in readings:
        by_language[language].append((gap, credited))
    found = {}
    for language, rows in sorted(by_language.items()):
        if len(rows) < MIN_CLAIM_READINGS:
            continue
        tried = [
            (margin, stated)
            for margin in MARGINS
            if len(stated := [credited for gap, credited in rows if gap >= margin]) >= MIN_STATED
        ]
        if not tried:
            continue
        precise = [(m, stated) for m, stated in tried if _precision(stated) >= CLAIM_PRECISION]
        at, stated = precise[0] if precise else max(tried, key=lambda t: _precision(t[1]))
        found[language] = ClaimMargin(
            margin=at if precise else None,
            at=at,
            precision=round(_precision(stated), 3),
            stated=len(stated),
            readings=len(rows),
            credited=round(sum(c for _, c in rows) / len(rows), 3),
            data=data,
        )
    return found


def _precision(stated: list[bool]) -> float:
    return sum(stated) / len(stated)


def load(path: Path) -> dict[str, JudgeTrust]:
    """The trust file's entries by model name; a missing file has none."""
    return dict(_read(path))


def store(entry: JudgeTrust, path: Path) -> None:
    """``entry`` written into the trust file under its model's name, the others kept."""
    entries = load(path)
    entries[entry.model] = entry
    data = {name: e.model_dump() for name, e in sorted(entries.items())}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def store_claims(model: str, claims: dict[str, ClaimMargin], path: Path) -> JudgeTrust:
    """The model's entry in ``path`` stored with its claim margins replaced and its criterion
    trust kept (0 over no readings for a model never fitted on criteria); returned."""
    kept = load(path).get(model) or JudgeTrust(
        model=model, trust=0.0, readings=0, judge_mae=0.0, mean_mae=0.0, data="not measured"
    )
    entry = kept.model_copy(update={"claims": claims})
    store(entry, path)
    return entry


def trust_of(model: str | None, path: Path | None = None) -> float:
    """The model's trust from the file (the shipped one by default); 0 for a model never
    measured: an unknown judge decides nothing."""
    found = _entry(model, path)
    return found.trust if found else 0.0


def claim_fit(model: str | None, language: str, path: Path | None = None) -> ClaimMargin | None:
    """How the model's claim check was fitted on answers of ``language``; None where it never
    was (its ``margin`` is None where it was, and no margin was precise enough)."""
    found = _entry(model, path)
    return found.claims.get(language) if found else None


def _entry(model: str | None, path: Path | None) -> JudgeTrust | None:
    """The model's entry: the file's (``GRADER_JUDGE_TRUST``) over the shipped one's."""
    if not model:
        return None
    entries = {**_read(SHIPPED), **(_read(path) if path is not None else {})}
    return entries.get(model)


def _read(path: Path) -> dict[str, JudgeTrust]:
    """``load``, its parse done once per content of the file: grading asks every answer's."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: not a judge trust file ({exc})") from exc
    return _parsed(path, text)


@functools.lru_cache(maxsize=16)
def _parsed(path: Path, text: str) -> dict[str, JudgeTrust]:
    try:
        return {name: JudgeTrust.model_validate(entry) for name, entry in json.loads(text).items()}
    except (ValueError, AttributeError) as exc:  # not JSON, not an object, or a bad entry
        raise ConfigError(f"{path}: not a judge trust file ({exc})") from exc
