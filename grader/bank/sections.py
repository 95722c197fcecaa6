"""Section headers of Chinese exam papers: which question type a header names, and its note.

Headers come in Simplified and Traditional, long and short (单项选择题 / 單選題), numbered
(``一、``) and sometimes run together with the text around them, so the patterns are built from
the Simplified words with each character widened to its Traditional variant. The note after a
header — ``（每题2分，共20分）`` or ``：本大题共10小题，每小题2分`` up to the end of its line —
carries the section's points rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grader.bank.lexicon import COUNT, PER_BLANK, PER_QUESTION, TOTAL
from grader.models import QuestionType
from grader.text import to_traditional

# Longest first: 多项选择题 must win over 选择题.
_TYPE_WORDS: list[tuple[str, QuestionType | None]] = [
    ("不定项选择题", QuestionType.MULTIPLE_CHOICE),
    ("单项选择题", QuestionType.SINGLE_CHOICE),
    ("多项选择题", QuestionType.MULTIPLE_CHOICE),
    ("案例分析题", QuestionType.CASE_STUDY),
    ("材料分析题", QuestionType.CASE_STUDY),
    ("综合应用题", QuestionType.CASE_STUDY),
    ("综合分析题", QuestionType.CASE_STUDY),
    ("程序设计题", QuestionType.SHORT_ANSWER),
    ("名词解释题", QuestionType.SHORT_ANSWER),
    ("单项选择", QuestionType.SINGLE_CHOICE),
    ("多项选择", QuestionType.MULTIPLE_CHOICE),
    ("单选题", QuestionType.SINGLE_CHOICE),
    ("多选题", QuestionType.MULTIPLE_CHOICE),
    ("选择题", None),  # single or multiple: decided per question by its answer
    ("阅读理解", None),  # choice or written: decided per question
    ("判断题", QuestionType.TRUE_FALSE),
    ("是非题", QuestionType.TRUE_FALSE),
    ("填空题", QuestionType.FILL_BLANK),
    ("简答题", QuestionType.SHORT_ANSWER),
    ("问答题", QuestionType.SHORT_ANSWER),
    ("名词解释", QuestionType.SHORT_ANSWER),
    ("计算题", QuestionType.SHORT_ANSWER),
    ("编程题", QuestionType.SHORT_ANSWER),
    ("应用题", QuestionType.SHORT_ANSWER),
    ("案例题", QuestionType.CASE_STUDY),
    ("分析题", QuestionType.CASE_STUDY),
    ("综合题", QuestionType.CASE_STUDY),
    ("设计题", QuestionType.CASE_STUDY),
    ("讨论题", QuestionType.DISCUSSION),
    ("论述题", QuestionType.DISCUSSION),
]


def _widen(word: str) -> str:
    """A regex matching ``word`` in Simplified or Traditional characters."""
    parts = []
    for ch in word:
        trad = to_traditional(ch)
        parts.append(re.escape(ch) if trad == ch else f"[{ch}{trad}]")
    return "".join(parts)


NUMERALS = "一二三四五六七八九十"
CHOICE_TYPES = (QuestionType.SINGLE_CHOICE, QuestionType.MULTIPLE_CHOICE)
_WORD_ALTERNATION = "|".join(f"(?P<w{i}>{_widen(w)})" for i, (w, _) in enumerate(_TYPE_WORDS))
# "一、單項選擇題（每題1分…）", "第二部分 多选题", or a bare "判断题" at the start of a line.
HEADER = re.compile(
    rf"(?:(?:第\s*)?(?P<numeral>[{NUMERALS}]{{1,3}})\s*(?:部分|[、.．:：])\s*|(?:^|(?<=\n))[ \t]*)"
    rf"(?:{_WORD_ALTERNATION})"
    r"[ \t]*(?P<note>[（(][^（()）\n]{0,120}[)）])?"
)
_QUESTION_NUMBER = re.compile(r"(?<![\d.])\d{1,3}\s*[.．、](?!\d)|[（(]\s*\d{1,3}\s*[)）]|第\s*\d")


@dataclass(frozen=True)
class SectionHeader:
    start: int
    end: int
    title: str
    type: QuestionType | None
    numeral: str | None  # 一, 二, … as printed, to match answers collected at the paper's end
    note: str = ""


def _line_note(text: str, pos: int) -> str:
    """``：本大题共10小题，每小题2分`` after a header, up to the end of its line, if it is one."""
    stop = text.find("\n", pos)
    rest = text[pos : len(text) if stop < 0 else stop]
    if len(rest) > 80 or _QUESTION_NUMBER.search(rest):
        return ""
    if any(p.search(rest) for p in (PER_QUESTION, PER_BLANK, TOTAL, COUNT)):
        return rest
    return ""


def find_headers(text: str) -> list[SectionHeader]:
    headers = []
    for m in HEADER.finditer(text):
        index = next(i for i in range(len(_TYPE_WORDS)) if m.group(f"w{i}"))
        note = m.group("note") or ""
        end = m.end()
        title = text[m.start() : m.end() - len(note)].strip()
        if not note and (line_note := _line_note(text, end)):
            note, end = line_note, end + len(line_note)
            title = title.rstrip(":：")
        headers.append(
            SectionHeader(
                start=m.start(),
                end=end,
                title=title,
                type=_TYPE_WORDS[index][1],
                numeral=m.group("numeral"),
                note=note,
            )
        )
    return headers
