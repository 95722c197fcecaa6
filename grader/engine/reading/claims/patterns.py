"""Claim patterns: what a rubric writes to say how rules recognise a claim.

A pattern is a list of groups that must all occur in one clause, in any order, or in two
adjacent clauses of a sentence, its first group in the first and its last in the second
("步数越大，显存越大"); a wrong claim's two-group pattern only in one clause (``rules``). A group is written as

- ``计算量|运算量|flops``: any of these terms (compared on keys: Traditional, case, spaces
  and hyphens do not matter);
- ``@down``: a shared word class (``lexicon.CLASSES``), mixable with terms: ``@down|1/n``;
- ``!立即更新|马上更新``: the group must occur *negated* ("不立即更新");
- ``-÷|/|除以``: the group must *not* occur in the span ("N = 目标 × micro", not "÷");
- ``#40~50 gb/g``: a number in the range followed by one of the units ("约45GB", "45 GiB").

A pattern led by ``*`` holds when its groups occur anywhere in the answer: a criterion that
asks for a whole architecture ("at least four layers") is read across it.

A term is negated when a negator stands just before it in its clause ("并不会减少",
"does not reduce"). Matching is ``str.find`` over short keys and one bounded number
pattern: linear in the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from grader.engine.reading.claims.lexicon import (
    CLASSES,
    DENIAL_LINKS,
    NEGATION_WINDOW,
    NEGATORS_EN,
    NEGATORS_ZH,
    NOT_NEGATIONS_ZH,
    OPPOSITES,
)
from grader.engine.reading.claims.text import Clause, key_of

_NUMBER = re.compile(r"\d{1,9}(?:\.\d{1,6})?")
_LATIN = re.compile(r"[a-z]")
# A Latin term this short is a word, not a stem: "amp" is not read in "example", "zero" not in
# "zero_grad"; a longer one may run on ("accumulat", "offload" in "offload_optimizer").
SHORT_WORD = 4


class PatternError(ValueError):
    """A group that cannot be read (an empty term, an unknown class, a bad range)."""


@dataclass(frozen=True)
class Value:
    """A number in [low, high] followed by one of ``units`` (keys)."""

    low: float
    high: float
    units: tuple[str, ...]


@dataclass(frozen=True)
class Group:
    terms: tuple[str, ...] = ()  # keys
    values: tuple[Value, ...] = ()
    negated: bool = False  # ``!``: must occur negated
    excluded: bool = False  # ``-``: must not occur at all
    words: frozenset[str] = frozenset()  # short Latin terms, read only where they stand alone
    latin: frozenset[str] = frozenset()  # longer Latin terms, not read after a prefix

    def hits(self, clause: Clause) -> list[tuple[int, int]]:
        """Where the group occurs in the clause: (start, end) in its key, overlapping terms
        merged ("activation checkpointing" is one occurrence, negated where it starts)."""
        found = [hit for v in self.values for hit in _values(clause, v)]
        for term in self.terms:
            start = clause.key.find(term)
            while start >= 0:
                if term in self.words:
                    read = clause.stands_alone(start, start + len(term))
                else:
                    read = term not in self.latin or not clause.after_prefix(start)
                if read:
                    found.append((start, start + len(term)))
                start = clause.key.find(term, start + 1)
        merged: list[tuple[int, int]] = []
        for start, end in sorted(found):
            if merged and start < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged


@lru_cache(maxsize=2048)
def parse_group(written: str) -> Group:
    """A group as written: alternatives joined by ``|`` (terms, ``@class``, ``#low~high
    unit/unit``), the whole group optionally led by ``!`` or ``-``."""
    text = written.strip()
    negated, excluded = text.startswith("!"), text.startswith("-")
    terms: list[str] = []
    values: list[Value] = []
    for alternative in text[1:].split("|") if negated or excluded else text.split("|"):
        alternative = alternative.strip()
        if alternative.startswith("#"):
            values.append(_value(alternative, written))
        elif alternative.startswith("@"):
            if alternative[1:] not in CLASSES:
                known = ", ".join("@" + c for c in CLASSES)
                raise PatternError(f"{written!r}: unknown class {alternative!r} ({known})")
            terms.extend(key_of(w) for w in CLASSES[alternative[1:]])
        elif key_of(alternative):
            terms.append(key_of(alternative))
        else:
            raise PatternError(f"{written!r}: an empty term")
    unique = tuple(dict.fromkeys(terms))
    return Group(
        terms=unique, values=tuple(values), negated=negated, excluded=excluded,
        words=frozenset(t for t in unique if len(t) <= SHORT_WORD and _LATIN.match(t)),
        latin=frozenset(t for t in unique if len(t) > SHORT_WORD and _LATIN.match(t)),
    )  # fmt: skip


def _value(alternative: str, written: str) -> Value:
    span, _, units = alternative[1:].partition(" ")
    low, sep, high = span.partition("~")
    try:
        lo, hi = float(low), float(high if sep else low)
    except ValueError:
        raise PatternError(f"{written!r}: a value is '#LOW~HIGH unit/unit'") from None
    keys = tuple(key_of(u) for u in units.split("/") if key_of(u))
    if lo > hi or not keys:
        raise PatternError(f"{written!r}: a value needs LOW <= HIGH and a unit")
    return Value(lo, hi, keys)


def negated_at(clause: Clause, start: int, ignored: bytes | bytearray = b"") -> bool:
    """Whether a negator stands just before key position ``start`` in the clause, a wide
    one ("不需要", "无需") anywhere before it, or a dismissal ending the clause after it
    ("用户画像也不需要"). Words that start with one and negate nothing ("不仅", "无论") do
    not count, nor does a negator at a position ``ignored`` marks: the pattern's own terms
    ("而不是", "不随")."""
    return _negator_before(clause, start, ignored, tight=False)


def denied_at(clause: Clause, start: int, ignored: bytes | bytearray = b"") -> bool:
    """Whether the term at ``start`` is negated in so many words: a wide negator before it
    ("不需要", "without"), a dismissal after it ("……跟兴趣无关"), or a negator right on it
    ("并非不变", "没有减少", "does not reduce"). A negator further back may be a verb's
    between them ("并不省算力", "不做梯度同步": the claim's own content), which ``negated_at``
    counts and a denial does not."""
    return _negator_before(clause, start, ignored, tight=True)


def _negator_before(clause: Clause, start: int, ignored: bytes | bytearray, tight: bool) -> bool:
    """``negated_at`` (within ``NEGATION_WINDOW`` characters or four English words) and,
    ``tight``, ``denied_at`` (only ``DENIAL_LINKS`` between, or two English words)."""

    def free(at: int) -> bool:
        return not (at < len(ignored) and ignored[at])

    wide = clause.wide_negation
    if 0 <= wide < start and free(wide):
        return True
    if start < clause.dismissal and free(clause.dismissal):
        return True
    reach = 1 + max(map(len, DENIAL_LINKS)) if tight else NEGATION_WINDOW
    for at in range(max(0, start - reach), start):
        if tight and clause.key[at + 1 : start] not in DENIAL_LINKS:
            continue
        if (
            clause.key[at] in NEGATORS_ZH
            and free(at)
            and not _negates_nothing(clause.key, at, start)
        ):
            return True
    words = clause.words_before(start, 2 if tight else 4)
    return any((w in NEGATORS_EN or w.endswith("n't")) and free(at) for w, at in words)


def _negates_nothing(key: str, at: int, start: int) -> bool:
    """A word that starts with a negator and negates nothing after it ("不仅", "无论"); a
    word like 不稳定 still negates its own 稳定 (a term starting inside it, before ``start``)."""
    return any(key.startswith(w, at) and at + len(w) <= start for w in NOT_NEGATIONS_ZH)


def opposite(written: list[str]) -> list[str] | None:
    """The pattern that contradicts a direction claim: its first group naming a direction
    class (``@up``, ``@down``, ``@same``) turned to the opposite classes, its synonyms of
    the claimed direction dropped ("计算量|算力", "@same|不变" → "计算量|算力", "@up|@down").
    None for a pattern with no direction, a ``!`` or ``-`` group, or one read anywhere."""
    if not written or written[0].strip() == "*":
        return None
    out, turned = [], False
    for group in written:
        text = group.strip()
        if text.startswith(("!", "-")):
            return None
        classes = [a.strip()[1:] for a in text.split("|") if a.strip()[1:] in OPPOSITES]
        if classes and not turned:
            flipped = dict.fromkeys(o for c in classes for o in OPPOSITES[c])
            out.append("|".join("@" + o for o in flipped))
            turned = True
        else:
            out.append(text)
    return out if turned else None


def has_negator(clause: Clause) -> bool:
    """Whether any negator stands in the clause: an opposite direction read in it could be
    negated from further back than ``negated_at`` looks ("不会因为多攒几次而变大")."""
    if clause.wide_negation >= 0 or clause.dismissal >= 0:
        return True
    for at, ch in enumerate(clause.key):
        if ch in NEGATORS_ZH and not _negates_nothing(clause.key, at, len(clause.key)):
            return True
    return any(w in NEGATORS_EN or w.endswith("n't") for w in clause.words())


def _values(clause: Clause, value: Value) -> list[tuple[int, int]]:
    """Numbers in the value's range directly followed by one of its units (a short Latin unit
    not running on into a longer word as written: "16b" but not "16bit"; "2.88 TB in total"
    is a unit, though the key runs its words together)."""
    found, key = [], clause.key
    for m in _NUMBER.finditer(key):
        if m.start() > 0 and (key[m.start() - 1].isdigit() or key[m.start() - 1] == "."):
            continue
        if not value.low <= float(m.group()) <= value.high:
            continue
        tail = key[m.end() : m.end() + 12]
        for unit in value.units:
            if not tail.startswith(unit):
                continue
            end = m.end() + len(unit)
            if len(unit) <= 3 and _LATIN.match(unit[-1]) and clause.runs_on(end):
                continue  # "16bit": the unit is part of a longer word
            found.append((m.start(), end))
            break
    return found
