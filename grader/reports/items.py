"""Item analysis from classical test theory, on a complete student × item score table.

- **Facility** (difficulty index): the mean score as a share of the item's points (1 = all
  full marks).
- **Discrimination**: the correlation of the item with the *rest* of the exam (total minus the
  item, the "corrected item-total" correlation, so an item does not correlate with itself);
  point-biserial for right/wrong items, Pearson for items with partial credit — the same
  formula. Below 0 the stronger students did worse on it (a wrong key, a misleading stem);
  below ``WEAK_BELOW`` it barely separates them (Ebel's "poor").
- **Upper-lower index**: (mean of the top 27 % − mean of the bottom 27 %) / points, groups by
  total score (Kelley's 27 %), ties at the cut broken by the table's student order.
- **Distractors** (choice questions): how many chose each option, overall and in the upper
  and lower groups. A wrong key shows as a distractor the upper group prefers.
- **Cronbach's alpha** and the **standard error of measurement** SD·√(1 − α) of the totals.

Variances are sample variances (ddof = 1). A figure that is undefined (an item everyone
scored the same on, fewer than two students) is ``None`` with a flag or note, never 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pandas as pd
from pydantic import BaseModel

WEAK_BELOW = 0.2
GROUP_SHARE = 0.27


class ItemFlag(StrEnum):
    NEGATIVE = "negative_discrimination"
    WEAK = "weak_discrimination"
    NO_VARIANCE = "no_variance"  # no spread in the item or the rest: discrimination undefined
    WRONG_KEY = "possible_wrong_key"  # the upper group prefers an option that is not the key


class OptionStats(BaseModel):
    option: str
    key: bool
    chosen: int
    upper: int
    lower: int
    discrimination: float | None  # (upper − lower) / group size; < 0 is what a distractor does


class ItemStats(BaseModel):
    question_id: str
    facility: float | None
    discrimination: float | None
    upper_lower: float | None
    flags: list[ItemFlag]
    distractors: list[OptionStats] | None = None


class TestStats(BaseModel):
    students: int
    items: int
    max_total: float
    mean: float | None
    sd: float | None
    alpha: float | None
    sem: float | None
    group_size: int  # students in each of the upper and lower groups


@dataclass(frozen=True)
class ChoiceItem:
    """A choice or true/false item's answers, read as options, for every student."""

    question_id: str
    options: list[str]  # in paper order: letters, or "true"/"false"
    key: frozenset[str]
    multiple: bool  # options are counted letter by letter
    responses: pd.Series  # student → "B", "ABD", "true", or a marker such as "(unreadable)"


@dataclass(frozen=True)
class ItemAnalysis:
    test: TestStats
    items: dict[str, ItemStats]


def group_size(students: int) -> int:
    return 0 if students < 2 else max(1, math.floor(GROUP_SHARE * students + 0.5))


def analyse(
    scores: pd.DataFrame, max_scores: pd.Series, choices: Sequence[ChoiceItem] = ()
) -> ItemAnalysis:
    """Statistics of every column of ``scores`` (rows: students; no missing values)."""
    if scores.isna().any().any():
        raise ValueError("item analysis needs a complete table: decide missing scores first")
    total = scores.sum(axis=1)
    size = group_size(len(scores))
    ranked = total.sort_values(ascending=False, kind="stable").index
    upper, lower = ranked[:size], ranked[len(ranked) - size :]
    facility = scores.mean() / max_scores
    rest = scores.rsub(total, axis=0)  # the rest-of-exam score, per item
    varies = (scores.nunique() > 1) & (rest.nunique() > 1)
    correlation = scores.loc[:, varies].corrwith(rest.loc[:, varies])
    upper_lower = (
        (scores.loc[upper].mean() - scores.loc[lower].mean()) / max_scores if size else None
    )
    by_item = {c.question_id: c for c in choices}
    items = {}
    for qid in scores.columns:
        r = _value(correlation.get(qid))
        table = _distractors(by_item[qid], upper, lower) if qid in by_item else None
        items[qid] = ItemStats(
            question_id=qid,
            facility=_value(facility[qid]),
            discrimination=r,
            upper_lower=None if upper_lower is None else _value(upper_lower[qid]),
            flags=_flags(r, bool(varies[qid]), by_item.get(qid), table, size),
            distractors=table,
        )
    return ItemAnalysis(_test_stats(scores, total, max_scores, size), items)


def _test_stats(
    scores: pd.DataFrame, total: pd.Series, max_scores: pd.Series, size: int
) -> TestStats:
    n, k = scores.shape
    sd = _value(total.std(ddof=1)) if n > 1 else None
    alpha = None
    if n > 1 and k > 1 and total.var(ddof=1) > 0:
        alpha = k / (k - 1) * (1 - scores.var(ddof=1).sum() / total.var(ddof=1))
    sem = sd * math.sqrt(1 - alpha) if sd is not None and alpha is not None else None
    return TestStats(
        students=n,
        items=k,
        max_total=float(max_scores.sum()),
        mean=_value(total.mean()) if n else None,
        sd=sd,
        alpha=_value(alpha),
        sem=_value(sem),
        group_size=size,
    )


def _distractors(item: ChoiceItem, upper: pd.Index, lower: pd.Index) -> list[OptionStats]:
    responses = item.responses.astype(str)
    if item.multiple:  # a letter counts for everyone who chose it, alone or with others
        marker = responses.str.startswith("(")
        letters = {c for r in responses[~marker] for c in r}
        seen = [*item.options, *sorted(letters - set(item.options))]
        chose = pd.DataFrame({o: responses.str.contains(o, regex=False) & ~marker for o in seen})
        for name in sorted(set(responses[marker])):
            chose[name] = responses == name
    else:
        chose = pd.get_dummies(responses).astype(bool)
        extra = sorted(set(chose.columns) - set(item.options), key=lambda o: (o[:1] == "(", o))
        chose = chose.reindex(columns=[*item.options, *extra], fill_value=False)
    size = len(upper)
    return [
        OptionStats(
            option=option,
            key=option in item.key,
            chosen=int(column.sum()),
            upper=int(column[upper].sum()),
            lower=int(column[lower].sum()),
            discrimination=(
                (int(column[upper].sum()) - int(column[lower].sum())) / size if size else None
            ),
        )
        for option, column in chose.items()
    ]


def _flags(
    r: float | None,
    varies: bool,
    item: ChoiceItem | None,
    table: list[OptionStats] | None,
    size: int,
) -> list[ItemFlag]:
    flags = []
    if not varies:
        flags.append(ItemFlag.NO_VARIANCE)
    elif r is not None and r < 0:
        flags.append(ItemFlag.NEGATIVE)
    elif r is not None and r < WEAK_BELOW:
        flags.append(ItemFlag.WEAK)
    if item is not None and table and size and _key_suspect(item, table, size):
        flags.append(ItemFlag.WRONG_KEY)
    return flags


def _key_suspect(item: ChoiceItem, table: list[OptionStats], size: int) -> bool:
    """Single answer: a distractor the upper group chose more often than the key, and more
    often than the lower group did. Multiple answers: a non-key letter most of the upper group
    chose (and more than the lower group), or a key letter the lower group chose more often."""
    options = [row for row in table if not row.option.startswith("(")]
    if item.multiple:
        return any(
            (not row.key and row.upper > row.lower and row.upper > size / 2)
            or (row.key and row.upper < row.lower)
            for row in options
        )
    key_upper = sum(row.upper for row in options if row.key)
    return any(not row.key and row.upper > key_upper and row.upper > row.lower for row in options)


def _value(x) -> float | None:
    """A float, or None for NaN / missing: undefined figures stay visibly undefined."""
    if x is None:
        return None
    x = float(x)
    return None if np.isnan(x) else x
