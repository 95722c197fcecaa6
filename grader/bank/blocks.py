"""A section's parts, recognised before any numbering is followed.

A section holds numbered questions or case blocks (``案例：``, ``案例一``, ``材料：``, ``背景：``,
``阅读材料，回答问题``), then perhaps a list of collected answers. Cases are found by their
introductions, so the numbered questions and reference answers inside a case stay inside it;
numbered questions are followed by their next expected number (``numbering``), and a collected
list is cut off first so its ``1.D 2.D …`` is never read as questions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from grader.bank.collected import Collected, block_heads, read_block
from grader.bank.lexicon import ANSWER_MARK, CASE_INTRO, QUESTION_LEAD
from grader.bank.numbering import Marker, first_marker, scan
from grader.bank.points import subquestions
from grader.bank.sections import NUMERALS


@dataclass(frozen=True)
class Item:
    """One question of a section: a numbered question or a whole case block."""

    start: int  # the number or the case's introduction
    body: int  # where its own text begins
    end: int
    number: str  # as printed: '3', '案例一'; a case without a number counts 1, 2, …
    ordinal: int
    is_case: bool = False
    lead: str | None = None  # a true/false mark printed before the number


@dataclass
class SectionLayout:
    items: list[Item]
    preamble_end: int  # the section's own text (points notes, instructions) ends here
    collected: Collected = field(default_factory=Collected)


def layout_section(text: str, start: int, end: int) -> SectionLayout | None:
    """The section's items, or None when it has neither a numbered question nor a case."""
    marker = first_marker(text, start, end)
    intro = CASE_INTRO.search(text, start, end)
    if intro is not None and (marker is None or intro.start() <= marker.start):
        items = _case_items(text, intro.start(), end)
        return SectionLayout(items, items[0].start)
    if marker is None:
        return None
    collected = Collected()
    questions_end = end
    block = _collected_block(text, marker, end)
    if block is not None:
        questions_end = block[0]
        collected = read_block(text, block[1], end, marker.ordinal)
    markers = scan(text, marker, questions_end)
    bounds = [m.start for m in markers[1:]] + [questions_end]
    items = [_question_item(m, stop) for m, stop in zip(markers, bounds, strict=True)]
    return SectionLayout(items, marker.start, collected)


def _question_item(marker: Marker, stop: int) -> Item:
    return Item(marker.start, marker.end, stop, marker.number, marker.ordinal, lead=marker.lead)


def _collected_block(text: str, first: Marker, end: int) -> tuple[int, int] | None:
    """A list of answers after the section's questions: one entry for (nearly) every question.

    A reference answer may itself be a numbered list: a collected block must have one entry per
    question before it, and more than one question.
    """
    for head, list_start in block_heads(text, first.end, end, first.ordinal):
        questions = scan(text, first, head)
        entries = read_block(text, list_start, end, first.ordinal).answers
        if len(questions) > 1 and len(entries) >= len(questions) * 0.8:
            return head, list_start
    return None


def _numeral_value(num: str) -> int:
    if num.isdigit():
        return int(num)
    if len(num) == 1:
        return NUMERALS.index(num) + 1
    tens, _, ones = num.partition("十")  # 十一, 二十, 二十三
    return (NUMERALS.index(tens) + 1 if tens else 1) * 10 + (
        NUMERALS.index(ones) + 1 if ones else 0
    )


def _asks(text: str, start: int, end: int) -> bool:
    """True once a case has said what it asks: 问题：, an answer, or numbered sub-questions."""
    return bool(
        QUESTION_LEAD.search(text, start, end)
        or ANSWER_MARK.search(text, start, end)
        or subquestions(text[start:end], numbered_lists=True)
        or re.search(r"[?？]", text[start:end])
    )


def _case_items(text: str, start: int, end: int) -> list[Item]:
    """Case blocks from their introductions.

    A second 材料 before the case has asked anything is more material for the same case, and
    once it has asked, only an introduction like its own (案例 after 案例) starts the next one:
    a 背景： inside a reference answer stays in that answer.
    """
    items: list[Item] = []
    words: list[str] = []
    for m in CASE_INTRO.finditer(text, start, end):
        word = m.group("word") or "阅读"
        if items:
            numbered_case = word == "案例" and m.group("num")
            if not numbered_case and (
                word != words[0] or not _asks(text, items[-1].body, m.start())
            ):
                continue
            items[-1] = replace(items[-1], end=m.start())
        num = m.group("num")
        ordinal = _numeral_value(num) if num else len(items) + 1
        number = f"{word}{num}" if num else str(ordinal)
        body = m.start("points") if m.group("points") else m.end()
        items.append(Item(m.start(), body, end, number, ordinal, is_case=True))
        words.append(word)
    return items
