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
from grader.bank.lexicon import ANSWER_MARK, CASE_INTRO, QUESTION_LEAD, SHARED_MATERIAL
from grader.bank.numbering import Marker, first_marker, number_pattern, scan
from grader.bank.points import subquestions


@dataclass(frozen=True)
class QuestionBlock:
    """One question of a section: a numbered question or a whole case block."""

    start: int  # the number or the case's introduction
    body: int  # where its own text begins
    end: int
    number: str  # as printed: '3', '案例一'; a case without a number counts 1, 2, …
    ordinal: int
    is_case: bool = False
    lead: str | None = None  # a true/false mark printed before the number
    material: str | None = None  # 阅读下面的材料，完成14～16题: the text these questions share


@dataclass
class SectionLayout:
    items: list[QuestionBlock]
    preamble_end: int  # the section's own text (points notes, instructions) ends here
    collected: Collected = field(default_factory=Collected)


def layout_section(text: str, start: int, end: int) -> SectionLayout | None:
    """The section's items, or None when it has neither a numbered question nor a case."""
    marker = first_marker(text, start, end)
    shared = list(SHARED_MATERIAL.finditer(text, start, end))
    intro = next((m for m in CASE_INTRO.finditer(text, start, end) if not _within(m, shared)), None)
    if intro is not None and (marker is None or intro.start() <= marker.start):
        items = _case_items(text, intro.start(), end, shared)
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
    items = _share_materials(text, items, shared)
    preamble_end = min([marker.start] + [m.start() for m in shared if m.start() < marker.start])
    return SectionLayout(items, preamble_end, collected)


def _within(m: re.Match[str], spans: list[re.Match[str]]) -> bool:
    return any(s.start() <= m.start() < s.end() for s in spans)


def _share_materials(
    text: str, items: list[QuestionBlock], shared: list[re.Match[str]]
) -> list[QuestionBlock]:
    """Give each question a shared material names (完成14～16题) the material's text, and end
    the question before the material where the material begins."""
    for m in shared:
        first, last = int(m.group("first")), int(m.group("last"))
        begins = next((i.start for i in items if i.ordinal == first and i.start >= m.start()), None)
        if begins is None:
            continue
        material = text[m.start() : begins].strip()
        items = [
            replace(i, end=m.start())
            if i.start < m.start() < i.end
            else replace(i, material=material)
            if first <= i.ordinal <= last and i.start >= m.start()
            else i
            for i in items
        ]
    return items


def _question_item(marker: Marker, stop: int) -> QuestionBlock:
    return QuestionBlock(
        marker.start, marker.end, stop, marker.number, marker.ordinal, lead=marker.lead
    )


def _collected_block(text: str, first: Marker, end: int) -> tuple[int, int] | None:
    """A list of answers after the section's questions: one entry for (nearly) every question.

    A reference answer may itself be a numbered list: a collected block must have one entry for
    (nearly) every question before it and no more — a list that runs on into the next
    question's number is a reference answer — and more than one question.
    """
    # Before the second question's number there is one question, which no list collects: such
    # heads are passed over without reading (a paper of many heads was quadratic).
    second = number_pattern(first.style, first.ordinal + 1).search(text, first.end, end)
    for head, list_start in block_heads(text, first.end, end, first.ordinal):
        if second is None or second.start() >= head:
            continue
        questions = scan(text, first, head)
        if len(questions) < 2:
            continue
        entries = read_block(text, list_start, end, first.ordinal).answers
        if len(questions) * 0.8 <= len(entries) <= len(questions):
            return head, list_start
    return None


def _asks(text: str, start: int, end: int) -> bool:
    """True once a case has said what it asks: 问题：, an answer, or numbered sub-questions."""
    return bool(
        QUESTION_LEAD.search(text, start, end)
        or ANSWER_MARK.search(text, start, end)
        or subquestions(text[start:end], numbered_lists=True)
    )


# A case holds at most this many materials before it asks anything: each check reads the case
# from its start, so without a bound a paper of thousands of 材料： lines took quadratic time.
MAX_MATERIALS = 20


def _case_items(
    text: str, start: int, end: int, shared: list[re.Match[str]]
) -> list[QuestionBlock]:
    """Case blocks from their introductions.

    A second 材料 before the case has asked anything (问题：, sub-questions, an answer) is more
    material for the same case; a numbered 案例 always starts a new one. Cases are numbered by
    their place in the section; the printed label (案例一, 材料二) is kept as the number.
    """
    items: list[QuestionBlock] = []
    merged = 0  # introductions taken into the current case as more material
    for m in CASE_INTRO.finditer(text, start, end):
        if _within(m, shared):
            continue
        word, num = m.group("word") or "阅读", m.group("num")
        if items:
            numbered_case = word == "案例" and num
            if (
                not numbered_case
                and merged < MAX_MATERIALS
                and not _asks(text, items[-1].body, m.start())
            ):
                merged += 1
                continue
            items[-1] = replace(items[-1], end=m.start())
            merged = 0
        ordinal = len(items) + 1
        number = f"{word}{num}" if num else str(ordinal)
        body = m.start("points") if m.group("points") else m.end()
        items.append(QuestionBlock(m.start(), body, end, number, ordinal, is_case=True))
    return items
