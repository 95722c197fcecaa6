"""What is no answer at all, decided by rule before any model: too little text, or words that
say "no answer" or only claim a grade. Every subjective answer passes here first, so each
pattern is linear in the answer's length (``tests/unit/test_linear_text.py``)."""

from __future__ import annotations

import re

from grader.models import ReviewCode
from grader.text import content_chars, match_key

# Answers that say "no answer" in words, or only claim a grade ("满分", "答案正确"): compared on
# match keys without punctuation.
NON_ANSWERS = frozenset(
    {
        *("不知道", "不会", "不会做", "不清楚", "不懂", "忘了", "略", "无", "没有", "空"),
        *("pass", "skip", "idk", "n/a", "na", "none", "idon'tknow", "dontknow", "noidea"),
        *("满分", "给满分", "答案正确", "正确", "对", "完全正确", "100分", "满分答案"),
        *("fullmarks", "fullscore", "correct", "thisiscorrect", "100", "perfect"),
    }
)

_NON_ANSWER_CHARS = max(len(n) for n in NON_ANSWERS)  # longer answers need no match key
# A label that opens an answer ("解：", "Thought process:") says nothing by itself.
_LEAD_IN = re.compile(
    r"^\s*+(?:thought\s*process|reasoning|final\s*answer|answer|解答?|答案?|回答|思路)\s*[:：]",
    re.IGNORECASE,
)
# The start of a verdict in the judge's own format ('{"C1":', '"points": 2'): no answer.
# Each key and the punctuation after it is one atomic step: "C11" is read once, never also as
# "C1" then "1", which made "C11" * 25 + "x" take seconds (no key starts with those characters,
# so the atomic reading matches exactly what the backtracking one did).
_VERDICT_FRAGMENT = re.compile(
    r'^[\s{}\[\]":,]*+(?>(?:C\d{1,2}|points|score|evidence|feedback)[\s{}\[\]":,\d.]*+)++$',
    re.IGNORECASE,
)


def blank_reason(answer: str, min_chars: int) -> ReviewCode | None:
    """``blank`` (too little text once an opening label like "解：" is set aside),
    ``non_answer`` ("不知道", "I don't know", a bare claim of full marks, the start of a
    verdict in the judge's format) or None."""
    body = _LEAD_IN.sub("", answer, count=1)
    content = content_chars(body)
    if content < min_chars:
        return ReviewCode.BLANK
    if _VERDICT_FRAGMENT.match(body):
        return ReviewCode.NON_ANSWER
    if content > _NON_ANSWER_CHARS:
        return None
    bare = "".join(ch for ch in match_key(body) if ch.isalnum() or ch in "'/")
    return ReviewCode.NON_ANSWER if bare in NON_ANSWERS else None
