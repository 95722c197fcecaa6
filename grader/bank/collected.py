"""Answers collected away from their questions: after a section, or in a part at the paper's end.

A collected list is read in every layout papers use: ``1.D 2.D …`` run on or one per line,
ranges ``1-5 BCDAB`` / ``6～10：√×√√×``, and the two-row tables Word exports (``题号 1 2 3`` over
``答案 B C D``). Each entry keeps the offset where it was printed, for the import report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from grader.bank.lexicon import ANSWER_HEAD_LINE, ANSWER_MARK, EXPLAIN_MARK

# number → (text, offset)
Entries = dict[int, tuple[str, int]]

_RANGE_SEP = r"\s*[-–—~～至]\s*"
_KEY_CHARS = "A-Ha-h√×✓✗✔✘对错對錯TF"
# A range is only taken when answers follow it ("1-5 BCDAB"), never "2-3天" inside a sentence.
_RANGE_KEYS = rf"(?=\s*[{_KEY_CHARS}][{_KEY_CHARS}\s,，、;；|]*(?:$|\n|\d))"
_TABLE_NUMBERS = re.compile(r"^[ \t]*[题題]\s*[号號][ \t|:：]*((?:\d+[ \t|]*)+)$", re.MULTILINE)
_TABLE_KEYS = re.compile(r"^[ \t]*(?:参考|參考|标准|標準)?答\s*案[ \t|:：]*(.+)$", re.MULTILINE)
_SPACE = re.compile(r"\s*")


def _entry_start(n: int, paren: bool | None = None) -> re.Pattern[str]:
    """``n.``, ``n、``, the range ``n-m`` or (``paren``) ``（n）`` that begins entry ``n``.

    A list keeps the style of its first entry, so the ``（3）`` inside an answer of a ``1. 2.``
    list is not entry 3; ``paren=None`` accepts either, for the first entry.
    """
    # \s*+: the spaces before the keys are skipped once, not split between two runs
    dot = rf"(?<![（(]){n}\s*[.．、:：)）](?!\d)|{n}{_RANGE_SEP}(?P<to>\d+)\s*+[.．、:：]?{_RANGE_KEYS}"
    bracket = rf"[（(]\s*{n}\s*[)）]"
    alternatives = {None: f"{dot}|{bracket}", False: dot, True: bracket}[paren]
    return re.compile(rf"(?<![\d.])(?:{alternatives})")


def _split_range(text: str, count: int) -> list[str] | None:
    """``B C D A B`` or ``BCDAB`` or ``√×√√×`` as ``count`` answers, or None."""
    tokens = [t for t in re.split(r"[\s,，、;；|]+", text.strip()) if t]
    if len(tokens) == count:
        return tokens
    compact = "".join(tokens)
    return list(compact) if len(compact) == count else None


def numbered_entries(text: str, start: int, end: int, first: int) -> Entries:
    """A list that begins with ``first`` and counts up: number → (text, offset)."""
    positions: list[tuple[int, int, int, int]] = []  # (from, to, marker start, body start)
    n, cursor, paren = first, start, None
    while m := _entry_start(n, paren).search(text, cursor, end):
        paren = m.group().lstrip()[:1] in "（("
        to = int(m.group("to")) if m.groupdict().get("to") else n
        if to < n:
            break
        positions.append((n, to, m.start(), m.end()))
        n, cursor = to + 1, m.end()
    entries: Entries = {}
    for i, (number, to, pos, body) in enumerate(positions):
        stop = positions[i + 1][2] if i + 1 < len(positions) else end
        chunk = text[body:stop].strip().rstrip("；;，,、")  # 1.B；2.C；
        if to == number:
            entries[number] = (chunk, pos)
        elif (parts := _split_range(chunk, to - number + 1)) is not None:
            entries.update({number + k: (part, pos) for k, part in enumerate(parts)})
    return entries


def table_entries(text: str, start: int, end: int) -> Entries:
    """``题号 1 2 3`` over ``答案 B C D`` rows (a table exported from Word)."""
    entries: Entries = {}
    for numbers in _TABLE_NUMBERS.finditer(text, start, end):
        keys = _TABLE_KEYS.match(text, numbers.end() + 1, end)
        if keys is None:
            continue
        labels = re.findall(r"\d+", numbers.group(1))
        values = [v for v in re.split(r"[ \t|]+", keys.group(1).strip()) if v]
        if len(labels) == len(values):
            entries.update({int(n): (v, keys.start()) for n, v in zip(labels, values, strict=True)})
    return entries


@dataclass
class Collected:
    """Answers and explanations collected for one section, by question number."""

    answers: Entries = field(default_factory=dict)
    explanations: Entries = field(default_factory=dict)


def read_block(text: str, start: int, end: int, first: int) -> Collected:
    """Answers from ``start`` (then ``解析：`` and explanations per number, if any) to ``end``."""
    explain = re.compile(rf"(?:{EXPLAIN_MARK.pattern})\s*(?={first}\s*[.．、])")
    m = explain.search(text, start, end)
    answers_end = m.start() if m else end
    answers = table_entries(text, start, answers_end) or numbered_entries(
        text, start, answers_end, first
    )
    explanations = numbered_entries(text, m.end(), end, first) if m else {}
    return Collected(answers, explanations)


def block_heads(text: str, start: int, end: int, first: int) -> list[tuple[int, int]]:
    """Places that may head a collected list for numbers from ``first``: (head, list start).

    ``答案：`` or a line ``参考答案`` followed by entry ``first``, or a ``题号`` table row.
    """
    heads = []
    for pattern in (ANSWER_MARK, ANSWER_HEAD_LINE):
        for m in pattern.finditer(text, start, end):
            space = _SPACE.match(text, m.end(), end)
            assert space is not None  # ``\s*`` always matches
            after = space.end()
            entry = _entry_start(first).match(text, after, end)
            if entry is not None:
                heads.append((m.start(), after))
    heads += [(m.start(), m.start()) for m in _TABLE_NUMBERS.finditer(text, start, end)]
    return sorted(set(heads))
