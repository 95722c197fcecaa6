"""The answers part at the end of a paper: ``参考答案`` then ``一、1.B 2.C … 二、1.√ …``.

It is found before the sections are, because it repeats their headers (``一、单项选择题``) and
would otherwise be read as new sections. A head line counts as the start of this part only
when every section header after it repeats one printed before it, and what follows the head is
a section reference or a numbered list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grader.bank.collected import Collected, read_block, table_entries
from grader.bank.lexicon import ANSWER_HEAD_LINE
from grader.bank.sections import CHOICE_TYPES, NUMERALS, SectionHeader, find_headers

_REF = re.compile(
    rf"(?:^|(?<=[\s。；;]))(?:第\s*)?(?P<numeral>[{NUMERALS}]{{1,3}})\s*(?:部分|[、.．:：])"
)
_NON_SPACE = re.compile(r"\S")
_LIST_START = re.compile(r"\s*(?:(?:1\s*[.．、:：](?!\d))|1\s*[-–—~～至]\s*\d|[题題]\s*[号號])")


@dataclass
class AnswerRef:
    """One section's answers in the end part: the section it names, and what was collected."""

    numeral: str | None
    header: SectionHeader | None
    offset: int
    collected: Collected


@dataclass
class AnswerPart:
    start: int
    refs: list[AnswerRef]  # one without numeral or header when the part is a single list


def find_answer_part(text: str) -> AnswerPart | None:
    headers = find_headers(text)
    for head in ANSWER_HEAD_LINE.finditer(text):
        before = [h for h in headers if h.start < head.start()]
        after = [h for h in headers if h.start > head.start()]
        if headers and not before:
            continue
        if not all(_repeats(h, before) for h in after):
            continue  # a section of questions follows: this head collects one section's answers
        refs = _refs(text, head.end(), after, {h.numeral for h in before})
        if refs:
            return AnswerPart(head.start(), refs)
        if _LIST_START.match(text, head.end()):
            collected = _read(text, head.end(), len(text))
            return AnswerPart(head.start(), [AnswerRef(None, None, head.end(), collected)])
    return None


def _repeats(header: SectionHeader, before: list[SectionHeader]) -> bool:
    """A header that names a section printed before it: same numeral, or (without a numeral)
    the same title or a type of one (``选择题：`` for the choice sections)."""
    if header.numeral is not None:
        return header.numeral in {h.numeral for h in before}
    if bare_title(header) in {bare_title(h) for h in before}:
        return True
    if header.type is None:
        return any(h.type in (*CHOICE_TYPES, None) for h in before)
    return header.type in {h.type for h in before}


def bare_title(header: SectionHeader) -> str:
    """The title without its numeral: 一、单选题 → 单选题."""
    return re.sub(rf"^(?:第\s*)?[{NUMERALS}]{{1,3}}\s*(?:部分|[、.．:：])\s*", "", header.title)


def _refs(
    text: str, start: int, headers: list[SectionHeader], numerals: set[str | None]
) -> list[AnswerRef]:
    """Section references in the part: repeated headers, or bare numerals ``一、`` of sections
    printed before it, in increasing order (a ``二、`` inside an answer is not a reference)."""
    # The part must start right after the head: look no further when nothing starts there
    # (a paper of many 答案 lines would otherwise scan the rest of it from each one).
    first = _NON_SPACE.search(text, start)
    at = first.start() if first else len(text)
    if not (headers and headers[0].start <= at):
        ref = _REF.match(text, at)
        if ref is None or len(ref.group("numeral")) != 1 or ref.group("numeral") not in numerals:
            return []
    places: dict[int, tuple[str | None, SectionHeader | None, int]] = {}
    for h in headers:
        places[h.start] = (h.numeral, h, h.end)
    order = [n for n in NUMERALS]
    last = -1
    for m in _REF.finditer(text, start):
        numeral = m.group("numeral")
        if any(h.start <= m.start() < h.end for h in headers) or numeral not in numerals:
            continue
        if len(numeral) == 1 and order.index(numeral) > last:
            places[m.start()] = (numeral, None, m.end())
            last = order.index(numeral)
    ordered = sorted(places.items())
    if not ordered or text[start : ordered[0][0]].strip():
        return []
    refs = []
    for i, (pos, (numeral, header, body)) in enumerate(ordered):
        stop = ordered[i + 1][0] if i + 1 < len(ordered) else len(text)
        refs.append(AnswerRef(numeral, header, pos, _read(text, body, stop)))
    return refs


def _read(text: str, start: int, end: int) -> Collected:
    first = re.search(r"(?<![\d.])(\d{1,3})\s*(?:[.．、:：](?!\d)|[-–—~～至])", text[start:end])
    if table_entries(text, start, end) or first is None:
        return read_block(text, start, end, 1)
    return read_block(text, start, end, int(first.group(1)))
