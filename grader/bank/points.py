"""Points: every rule a paper uses to say what a question is worth, and the checks on totals.

A question's points come from, in order: its own note (``（5分）`` after the number or at the
end of the stem, ``本题10分``), the sum of its sub-questions' notes (``（1）…（3分）（2）…（4分）``),
the section's ``每空N分`` times its blanks, the section's ``每题N分``, and last what is left of
the section's ``共N分`` shared among the questions that have nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from grader.bank.lexicon import (
    COUNT,
    PAPER_TOTAL,
    PER_BLANK,
    PER_QUESTION,
    POINTS_NOTE,
    POINTS_PHRASE,
    TOTAL,
)

# 本题10分 · 本题满分10分 · 本題共10分 in a section's note: what the whole section is worth
_WHOLE_SECTION = re.compile(r"本[题題]\s*+(?:(?:满分|滿分|共)\s*+)?(\d+(?:\.\d+)?)\s*+分")


@dataclass(frozen=True)
class SectionRule:
    """The points rules printed with a section header or in the lines right after it."""

    each: float | None = None
    per_blank: float | None = None
    total: float | None = None
    count: int | None = None

    @classmethod
    def parse(cls, text: str) -> SectionRule:
        def number(pattern: re.Pattern[str]) -> float | None:
            m = pattern.search(text)
            return float(m.group(1)) if m else None

        count = COUNT.search(text)
        total = number(TOTAL)
        if total is None:  # 五、简答题（本题10分）: a section of one question says 本题
            total = number(_WHOLE_SECTION)
        return cls(
            each=number(PER_QUESTION),
            per_blank=number(PER_BLANK),
            total=total,
            count=int(count.group(1)) if count else None,
        )

    @property
    def declared_count(self) -> int | None:
        if self.count is not None:
            return self.count
        if self.each and self.total:
            return round(self.total / self.each)
        return None

    @property
    def says_anything(self) -> bool:
        return any(v is not None for v in (self.each, self.per_blank, self.total, self.count))


def take_own_points(stem: str) -> tuple[float | None, str]:
    """Points printed with the question itself, and the stem without a bare ``（N分）`` note.

    A note right after the number or at the very end of the stem is removed (it is not part of
    the question); ``本题10分`` inside a sentence is read but left in place.
    """
    lead = re.match(rf"\s*+{POINTS_NOTE.pattern}", stem)
    if lead:
        return float(lead.group(1)), stem[lead.end() :].strip()
    trail = re.search(rf"{POINTS_NOTE.pattern}\s*+(?:[。.]\s*+)?$", stem)
    if trail and not _inside_last_subquestion(stem, trail.start()):
        return float(trail.group(1)), stem[: trail.start()].strip()
    phrase = POINTS_PHRASE.search(stem)
    if phrase:
        return float(phrase.group(1)), stem
    return None, stem


def per_blank(stem: str) -> float | None:
    """``每空2分`` printed with the question."""
    m = PER_BLANK.search(stem)
    return float(m.group(1)) if m else None


# Sub-questions: （1）（2）…, (1)(2)…, ①②…; in a case, also 1. 2. … and 问题1：问题2：…
_SUB_STYLES: list[Callable[[int], str]] = [
    lambda n: rf"[（(]\s*{n}\s*[)）]",
    lambda n: chr(0x2460 + n - 1) if n <= 20 else "(?!)",
    lambda n: rf"(?:^|(?<=[\s。；;：:]))(?<![\d.]){n}\s*[.．、](?!\d)",
    lambda n: rf"(?:问题|問題)\s*{n}\s*[.．、:：]",
]


def subquestions(text: str, *, numbered_lists: bool = False) -> list[tuple[int, int]]:
    """Spans of the sub-questions ``（1）…（2）…`` in ``text``: at least two, numbered from 1."""
    styles = _SUB_STYLES if numbered_lists else _SUB_STYLES[:2]
    for style in styles:
        starts = []
        cursor, n = 0, 1
        while m := re.compile(style(n), re.MULTILINE).search(text, cursor):
            starts.append(m.start())
            cursor, n = m.end(), n + 1
        if len(starts) >= 2:
            bounds = [*starts[1:], len(text)]
            return list(zip(starts, bounds, strict=True))
    return []


def _inside_last_subquestion(stem: str, pos: int) -> bool:
    spans = subquestions(stem, numbered_lists=True)
    return bool(spans) and spans[-1][0] <= pos


def subquestion_points(text: str, *, numbered_lists: bool = False) -> list[float | None]:
    """The points printed in each sub-question (None where a sub-question prints none)."""
    found = []
    for start, end in subquestions(text, numbered_lists=numbered_lists):
        notes = POINTS_NOTE.findall(text, start, end)
        found.append(float(notes[-1]) if notes else None)
    return found


def paper_total(title: str) -> float | None:
    """``满分100分`` or ``总分：100`` in the text before the first section."""
    m = PAPER_TOTAL.search(title)
    return float(m.group(1)) if m else None


def share_total(rule: SectionRule, points: list[float | None]) -> list[float | None]:
    """Give the questions without points what is left of the section's ``共N分``, equally.

    With a declared count (``共4题``) the rest is shared by the questions the paper should have,
    so a cut-off section does not hand its missing questions' points to the ones it kept.
    """
    missing = [i for i, p in enumerate(points) if p is None]
    if rule.total is None or not missing:
        return points
    known = [p for p in points if p is not None]
    left = rule.total - sum(known)
    sharing = len(missing)
    if rule.declared_count is not None and rule.declared_count > len(known):
        sharing = rule.declared_count - len(known)
    if left <= 0:
        return points
    share = left / sharing
    return [share if p is None else p for p in points]
