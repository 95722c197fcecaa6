"""Answer keys as printed: letters, true/false marks and fill-in text with its alternatives.

A key is often followed by why: ``答案：A（因为…）``, ``答案：错误。理由…``. For choice and
true/false questions the key is the leading letters or mark and the rest is an explanation. For
fill-in the brackets mean something else — ``连续（continuous）`` names a second accepted
answer — so blanks are split on ``或`` ``/`` ``（）`` and, for several blanks, on ``；`` or on
``①②`` / ``（1）（2）``.
"""

from __future__ import annotations

import re

from grader.bank.lexicon import BLANK
from grader.bank.marks import choice_letters, true_false

# Possessive runs: "A A A … Az" is read in one pass, not by trying every split of its spaces.
_LEADING_LETTERS = re.compile(r"\s*+([A-H](?:\s*+(?:[,，、/和及与]\s*+)?[A-H])*)(?![A-Za-z])")
# A mark that is a word (对, 正确) must end at punctuation: "对数函数…" is not a key.
_LEADING_MARK = re.compile(
    r"\s*+(?:([√×✓✗✔✘TF]|true|false)(?![A-Za-z])"
    r"|(正[确確]|不正[确確]|[错錯][误誤]|[对對错錯])(?=$|[\s。.，,；;：:、（(【\[！!]))",
    re.IGNORECASE,
)
_EXPLAIN_EDGES = " \t\n。.，,；;：:、（）()【】[]"


def _rest_as_explanation(rest: str) -> str | None:
    """What follows a key: ``（因为…）`` or ``。因为…`` → ``因为…``."""
    rest = rest.strip()
    if rest[:1] in "（(【[" and rest[-1:] in "）)】]":
        rest = rest[1:-1]
    rest = rest.strip(_EXPLAIN_EDGES)
    return rest or None


def choice_key(text: str) -> tuple[str | None, str | None]:
    """Letters ("BCD") and any explanation printed after them, or (None, None)."""
    letters = choice_letters(text)
    if letters is not None:
        return letters, None
    m = _LEADING_LETTERS.match(text)
    if m is None:
        return None, None
    return choice_letters(m.group(1)), _rest_as_explanation(text[m.end() :])


def true_false_key(text: str) -> tuple[bool | None, str | None]:
    """True/False and any explanation printed after the mark, or (None, None)."""
    value = true_false(text)
    if value is not None:
        return value, None
    m = _LEADING_MARK.match(text)
    if m is None:
        return None, None
    return true_false(m.group(1) or m.group(2)), _rest_as_explanation(text[m.end() :])


# ①梯度 ②学习率 · （1）梯度（2）学习率 · 1.梯度 2.学习率 as the answers of several blanks
_NUMBERED_PARTS = [
    re.compile(r"[\u2460-\u2473]"),
    re.compile(r"[（(]\s*\d{1,2}\s*[)）]"),
]
_SEPARATORS = ("；", ";", "，", ",", "、", " ")
# Split points start where their spaces do, so a long run of spaces is not rescanned from each.
_OR = re.compile(r"(?<!\s)\s*+(?:或者|或|\|)\s*+")
_SLASH = re.compile(r"(?<!\s)\s*+[/／]\s*+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_ALTERNATIVE_IN_BRACKETS = re.compile(r"^(?P<main>.*?\S)\s*+[（(](?P<alt>[^（()）]+)[)）]$")


def blank_count(stem: str) -> int:
    return len(BLANK.findall(stem))


def blanks(stem: str, answer: str) -> list[list[str]]:
    """Accepted alternatives per blank, in order."""
    return [alternatives(part) for part in _per_blank(answer, blank_count(stem) or 1)]


def _per_blank(answer: str, count: int) -> list[str]:
    if count < 2:
        return [answer.strip()]
    for marker in _NUMBERED_PARTS:
        pieces = [p.strip(" ；;，,、") for p in marker.split(answer)]
        pieces = [p for p in pieces if p]
        if len(pieces) == count:
            return pieces
    for sep in _SEPARATORS:
        candidate = [p.strip() for p in answer.split(sep) if p.strip()]
        if len(candidate) == count:
            return candidate
    return [answer.strip()]


def alternatives(part: str) -> list[str]:
    """``A或B`` → [A, B]; ``显存/内存`` → both; ``连续（continuous）`` → [连续, continuous, whole].

    A slash or bracket between two Latin terms is kept whole (``TCP/IP``, ``backward()``,
    ``f(x)``): only where one side is Chinese is it read as an alternative.
    """
    found: list[str] = []
    for piece in (p for p in _OR.split(part.strip().rstrip("。.")) if p.strip()):
        sides = [s for s in _SLASH.split(piece) if s]
        if len(sides) > 1 and any(_CJK.search(s) for s in sides):
            found.extend(sides)
            continue
        m = _ALTERNATIVE_IN_BRACKETS.match(piece)
        if m and (_CJK.search(m.group("main")) or _CJK.search(m.group("alt"))):
            found.extend([m.group("main").strip(), m.group("alt").strip(), piece])
            continue
        found.append(piece.strip())
    return list(dict.fromkeys(found))
