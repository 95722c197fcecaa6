"""Section headers of Chinese exam papers: which question type a header names, and its points.

Headers come in Simplified and Traditional, long and short (单项选择题 / 單選題), numbered
(``一、``) and sometimes run together with the text around them, so the patterns are built from
the Simplified words with each character widened to its Traditional variant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grader.models import QuestionType
from grader.text import to_traditional

# Longest first: 多项选择题 must win over 选择题.
_TYPE_WORDS: list[tuple[str, QuestionType | None]] = [
    ("不定项选择题", QuestionType.MULTIPLE_CHOICE),
    ("单项选择题", QuestionType.SINGLE_CHOICE),
    ("多项选择题", QuestionType.MULTIPLE_CHOICE),
    ("案例分析题", QuestionType.CASE_STUDY),
    ("单选题", QuestionType.SINGLE_CHOICE),
    ("多选题", QuestionType.MULTIPLE_CHOICE),
    ("选择题", None),  # single or multiple: decided per question by its answer
    ("判断题", QuestionType.TRUE_FALSE),
    ("是非题", QuestionType.TRUE_FALSE),
    ("填空题", QuestionType.FILL_BLANK),
    ("简答题", QuestionType.SHORT_ANSWER),
    ("问答题", QuestionType.SHORT_ANSWER),
    ("名词解释", QuestionType.SHORT_ANSWER),
    ("计算题", QuestionType.SHORT_ANSWER),
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


_NUMERAL = "一二三四五六七八九十"
_WORD_ALTERNATION = "|".join(f"(?P<w{i}>{_widen(w)})" for i, (w, _) in enumerate(_TYPE_WORDS))
# "一、單項選擇題（每題1分…）", "第二部分 多选题", or a bare "判断题" at the start of a line.
HEADER = re.compile(
    rf"(?:(?:第\s*)?(?P<numeral>[{_NUMERAL}]{{1,3}})\s*(?:部分|[、.．:：])\s*|(?:^|(?<=\n))[ \t]*)"
    rf"(?:{_WORD_ALTERNATION})"
    r"[ \t]*(?P<note>[（(][^（()）\n]{0,120}[)）])?"
)

_EACH = re.compile(r"每[小]?[题題]\s*(\d+(?:\.\d+)?)\s*分")
_COUNT = re.compile(r"共\s*(\d+)\s*(?:小)?[题題道]")
_TOTAL = re.compile(r"共\s*(\d+(?:\.\d+)?)\s*分")


@dataclass(frozen=True)
class SectionHeader:
    start: int
    end: int
    title: str
    type: QuestionType | None
    points_each: float | None
    declared_count: int | None
    declared_total: float | None


def find_headers(text: str) -> list[SectionHeader]:
    headers = []
    for m in HEADER.finditer(text):
        index = next(i for i in range(len(_TYPE_WORDS)) if m.group(f"w{i}"))
        note = m.group("note") or ""
        each, count, total = _EACH.search(note), _COUNT.search(note), _TOTAL.search(note)
        headers.append(
            SectionHeader(
                start=m.start(),
                end=m.end(),
                title=text[m.start() : m.end() - len(note)].strip(),
                type=_TYPE_WORDS[index][1],
                points_each=float(each.group(1)) if each else None,
                declared_count=int(count.group(1)) if count else None,
                declared_total=float(total.group(1)) if total else None,
            )
        )
    return headers
