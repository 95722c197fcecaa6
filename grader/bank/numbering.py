"""Question numbers: where each question of a section starts.

A section's first question fixes the numbering style (``1.`` ``1．`` ``1、``, ``（1）``, ``第1题``);
after it the parser looks only for the *next expected number* in that style, which is what
keeps ``PyTorch2.1``, ``A100`` or ``=8。`` from being read as question starts. Two more things
keep lists from becoming questions: other styles inside a question are its sub-questions, and a
numbered list that an answer or explanation starts (``参考答案：1.… 2.…``) is followed item by
item, so its ``2.`` is not question 2 unless what follows it has an answer of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from grader.bank.lexicon import ANSWER_MARK, EXPLAIN_MARK, TF_MARK


class Style(StrEnum):
    DOT = "dot"  # 1.  1．  1、
    PAREN = "paren"  # （1）  (1)
    TI = "ti"  # 第1题


@dataclass(frozen=True)
class Marker:
    """A question number found in the text: the span of the marker and its printed number."""

    start: int
    end: int
    number: str
    ordinal: int
    style: Style
    lead: str | None = None  # a true/false mark printed before the number: （√）1.…


_PATTERNS = {
    # not 2.1 or 3.14, but "1.2018年…" is question 1 about a year
    Style.DOT: r"(?<![\d.]){n}\s*[.．、](?:(?!\d)|(?=(?:1[5-9]|20)\d\d年))",
    Style.PAREN: r"[（(]\s*{n}\s*[)）]",
    Style.TI: r"第\s*{n}\s*小?[题題](?:\s*[.．、:：])?",
}
_ANY_NUMBER = r"(?P<n>\d{1,3})"
_LEAD = re.compile(rf"[（(]\s*(?P<mark>{TF_MARK})\s*[)）]\s*$")


def number_pattern(style: Style, n: int | None = None) -> re.Pattern[str]:
    """The marker of question ``n`` in ``style`` (any number when ``n`` is None)."""
    return re.compile(_PATTERNS[style].format(n=_ANY_NUMBER if n is None else n))


def strong_boundary(text: str, pos: int) -> bool:
    """True when the character before ``pos`` cannot belong to a word or formula."""
    if pos == 0:
        return True
    prev = text[pos - 1]
    return not (prev.isascii() and (prev.isalnum() or prev in "._)]}%'\"-"))


def _at_line_start(text: str, pos: int) -> bool:
    line_start = text.rfind("\n", 0, pos) + 1
    return not text[line_start:pos].strip()


def _marker(text: str, m: re.Match[str], style: Style, ordinal: int) -> Marker:
    """A Marker for match ``m``, taking in a true/false mark printed just before it."""
    start = m.start()
    lead = _LEAD.search(text, max(0, start - 12), start)
    if lead and _at_line_start(text, lead.start()):
        return Marker(lead.start(), m.end(), str(ordinal), ordinal, style, lead.group("mark"))
    return Marker(start, m.end(), str(ordinal), ordinal, style)


def first_marker(text: str, start: int, end: int) -> Marker | None:
    """The section's first question: any number (numbering may run on from the last section).

    At the start of the section every style counts; further in, a ``1.`` needs a clean boundary
    and a ``（1）`` must begin a line, since inside text it is more likely a sub-question.
    """
    head = re.compile(rf"\s*(?:[（(]\s*(?:{TF_MARK})\s*[)）]\s*)?")
    lead = head.match(text, start, end)
    assert lead is not None  # every part of ``head`` is optional: it always matches
    at = lead.end()
    best: tuple[int, re.Match[str], Style] | None = None
    for style in Style:
        pattern = number_pattern(style)
        m = pattern.match(text, at, end)
        if m is None:
            m = next(
                (
                    c
                    for c in pattern.finditer(text, start, end)
                    if (style is Style.PAREN and _at_line_start(text, c.start()))
                    or (style is Style.DOT and strong_boundary(text, c.start()))
                    or style is Style.TI
                ),
                None,
            )
        if m is not None and (best is None or m.start() < best[0]):
            best = (m.start(), m, style)
    if best is None:
        return None
    _, m, style = best
    return _marker(text, m, style, int(m.group("n")))


def scan(text: str, first: Marker, end: int) -> list[Marker]:
    """Follow the numbering n, n+1, … from ``first`` up to ``end``."""
    found = [first]
    while (nxt := _next(text, found[-1], end)) is not None:
        found.append(nxt)
    return found


def _next(text: str, current: Marker, end: int) -> Marker | None:
    n = current.ordinal + 1
    for m in number_pattern(current.style, n).finditer(text, current.end, end):
        before = text[current.end : m.start()]
        # After an answer marker, a number may follow a letter or digit directly
        # ("答案：C2.在…", "答案：backward()6.…"); elsewhere it needs a clean boundary.
        marker = _marker(text, m, current.style, n)
        if not (strong_boundary(text, marker.start) or ANSWER_MARK.search(before)):
            continue
        if _continues_answer_list(text, current, m, end):
            continue
        return marker
    return None


def _continues_answer_list(text: str, current: Marker, m: re.Match[str], end: int) -> bool:
    """True when ``m`` is the next item of a list that an answer or explanation started.

    ``参考答案：1.… 2.…`` under question 1: the reference's ``2.`` is its second item, not
    question 2 — unless the text after it has an answer of its own, as a question would.
    """
    marks = [
        mark.end()
        for pattern in (ANSWER_MARK, EXPLAIN_MARK)
        if (mark := pattern.search(text, current.end, m.start()))
    ]
    if not marks:
        return False
    items = 0
    cursor = min(marks)
    while item := number_pattern(current.style, items + 1).search(text, cursor, m.start()):
        items, cursor = items + 1, item.end()
    if items == 0 or items + 1 != current.ordinal + 1:
        return False
    following = number_pattern(current.style).search(text, m.end(), end)
    segment = text[m.end() : following.start() if following else end]
    return not ANSWER_MARK.search(segment)
