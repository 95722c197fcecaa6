"""Bare keywords: an answer that lists the rubric's terms without saying anything of them.

"梯度累加 / 不立即更新 / 多个小批次 / …" names every key point and asserts none: no relation,
no order, no reason. Such an answer is read as a list when it is not written in sentences (at
most one Chinese comma, full stop or colon), has at least ``MIN_ITEMS`` items (split at 、 | ;,
" / " and line breaks; "n/2" is a formula, not two items), half of them or more at most
``SHORT_CHARS`` letters long, and at least ``KEY_SHARE`` of them the rubric's own key points,
inside one or holding one. Terms may also stand between spaces alone ("梯度累积 PyTorch
zero_grad loss backward …"): an answer with no sentence mark at all is split at its spaces
when its separators give too few items and its spaces ``SPACED_ITEMS`` or more, unless an
English function word shows it is a sentence ("divide the loss by n"); real students' terse
notes run shorter (ADS and Mohler development answers of 6–7 such items are right answers).
Likewise ``SPACED_ITEMS`` terms or more between commas with no function word ("ZeRO-3,
all-gather, offload, …": held-out hold20-006; no ADS or Mohler answer is such a list).
A fenced code block is a program, never a list. A list verifies no part and earns at most
the restatement's cap (``substance``). One pass over the answer.
"""

from __future__ import annotations

import re

from grader.models import Rubric
from grader.text import content_chars, match_key

MIN_ITEMS = 6
SPACED_ITEMS = 12
SHORT_CHARS = 16
KEY_SHARE = 0.4
_SEPARATORS = re.compile(r"[、；;|\n·•]+|\s/\s")  # "/" only between spaces: n/2 is a formula
_COMMAS = re.compile(r",\s*")  # "ZeRO-3, all-gather, offload, …": terms between commas
FENCE = "```"  # a fenced code block's mark (``text.clauses_of`` reads one as one clause)
_SENTENCE_MARKS = re.compile(r"[,.;:!?](?:\s|$)")  # "clip_grad_norm_" and ".grad" are terms
_FUNCTION_WORDS = frozenset(
    {
        *("a", "an", "the", "is", "are", "be", "to", "of", "by", "and", "or", "in", "on", "for"),
        *("with", "it", "its", "we", "you", "then", "so", "that", "this", "when", "if", "not"),
    }
)
_PROSE = (
    "，",
    "。",
    "！",
    "？",
    "：",
)  # a list has none of these; an answer written in sentences has


def keyword_list(answer: str, rubric: Rubric) -> bool:
    """Whether ``answer`` is only a list of the rubric's terms (module docstring)."""
    marks = sum(answer.count(mark) for mark in _PROSE)
    if marks > 1 or FENCE in answer:
        return False  # sentences, or a program: its lines are statements, not terms
    items = _items(answer, spaced=marks == 0)
    if len(items) < MIN_ITEMS:
        return False
    short = sum(content_chars(i) <= SHORT_CHARS for i in items)
    if short * 2 < len(items):
        return False
    keys = [match_key(k) for c in rubric.criteria for k in c.key_points if k.strip()]
    listed = sum(any(i in k or k in i for k in keys) for i in items)
    return listed >= KEY_SHARE * len(items)


def _items(answer: str, spaced: bool) -> list[str]:
    """The answer's items as match keys: split at the list separators, or, ``spaced`` (no
    Chinese sentence mark at all), at its spaces where those give too few and nothing marks
    an English sentence."""
    items = [i for i in _SEPARATORS.split(answer) if content_chars(i) > 0]
    if len(items) < MIN_ITEMS:
        listed = [i for i in _COMMAS.split(answer) if content_chars(i) > 0]
        if len(listed) >= SPACED_ITEMS and not any(
            w.casefold() in _FUNCTION_WORDS for i in listed for w in i.split()
        ):
            return [match_key(i) for i in listed]
    if len(items) < MIN_ITEMS and spaced:
        words = [w for w in answer.split() if content_chars(w) > 0]
        sentence = _SENTENCE_MARKS.search(answer) or any(
            w.casefold() in _FUNCTION_WORDS for w in words
        )
        if not sentence and len(words) >= SPACED_ITEMS:
            items = words
    return [match_key(i) for i in items]
