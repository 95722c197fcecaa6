"""Exact grading of objective questions: choice, true/false, fill-in. No model involved.

Each function returns an ``ObjectiveScore`` that says how the answer was *read* as well as what
it scored, so an instructor can see at a glance why ``（B）`` or ``選b`` counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from grader.bank.marks import choice_letters, true_false
from grader.models import MultipleChoiceCredit, Question, QuestionType, ReviewCode, ReviewReason
from grader.text import match_key


@dataclass
class ObjectiveScore:
    points: float
    max_points: float
    correct: bool
    read_as: str | bool | list[str] | None
    reasons: list[ReviewReason] = field(default_factory=list)


def grade_objective(
    question: Question,
    answer: str,
    max_points: float,
    credit: MultipleChoiceCredit = MultipleChoiceCredit.ALL_OR_NOTHING,
) -> ObjectiveScore:
    if question.type in (QuestionType.SINGLE_CHOICE, QuestionType.MULTIPLE_CHOICE):
        return _choice(question, answer, max_points, credit)
    if question.type is QuestionType.TRUE_FALSE:
        return _true_false(question, answer, max_points)
    if question.type is QuestionType.FILL_BLANK:
        return _fill_blank(question, answer, max_points)
    raise ValueError(f"{question.id} is a {question.type} question, not objective")


def _unreadable(max_points: float, what: str, answer: str) -> ObjectiveScore:
    reason = ReviewReason(
        code=ReviewCode.UNREADABLE_ANSWER, message=f"{answer[:40]!r} is not {what}"
    )
    return ObjectiveScore(0.0, max_points, False, None, [reason])


def _choice(
    question: Question, answer: str, max_points: float, credit: MultipleChoiceCredit
) -> ObjectiveScore:
    chosen = choice_letters(answer, question.options)
    if chosen is None:
        return _unreadable(max_points, "an option letter", answer)
    key = set(str(question.answer))
    picked = set(chosen)
    if picked == key:
        return ObjectiveScore(max_points, max_points, True, chosen)
    reasons = []
    if question.options and not picked <= question.options.keys():
        missing = "".join(sorted(picked - question.options.keys()))
        reasons.append(
            ReviewReason(code=ReviewCode.NO_SUCH_OPTION, message=f"option {missing} not offered")
        )
    points = 0.0
    if question.type is QuestionType.MULTIPLE_CHOICE and picked < key:
        if credit is MultipleChoiceCredit.PARTIAL:
            points = max_points * len(picked) / len(key)
        elif credit is MultipleChoiceCredit.HALF:
            points = max_points / 2
    return ObjectiveScore(round(points, 4), max_points, False, chosen, reasons)


def _true_false(question: Question, answer: str, max_points: float) -> ObjectiveScore:
    value = true_false(answer)
    if value is None:
        return _unreadable(max_points, "true or false", answer)
    correct = value is question.answer
    return ObjectiveScore(max_points if correct else 0.0, max_points, correct, value)


# --- fill-in -------------------------------------------------------------------------------

_CN_DIGIT = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
             "七": 7, "八": 8, "九": 9}  # fmt: skip
_CN_UNIT = {"十": 10, "百": 100, "千": 1000, "万": 10_000}
_CN_NUMBER = re.compile(r"[零〇一二两三四五六七八九十百千万]+")
_NUMBER_UNIT = re.compile(r"^([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)(.*)$")
_UNIT_ALIASES = {"x": "倍", "×": "倍", "times": "倍", "percent": "%", "％": "%"}
_ANSWER_SEPARATORS = re.compile(r"\s*[；;，,、/|]\s*|\s+")


def _cn_to_int(numeral: str) -> int:
    """Chinese numerals up to the ten-thousands: 四 → 4, 十二 → 12, 三百零五 → 305."""
    total, current = 0, 0
    for ch in numeral:
        if ch in _CN_DIGIT:
            current = _CN_DIGIT[ch]
        else:
            unit = _CN_UNIT[ch]
            total += (current or 1) * unit
            current = 0
    return total + current


def fill_key(text: str) -> str:
    """Comparison key for a blank: match_key plus Chinese numerals as digits, 4.0 as 4."""
    key = match_key(text)
    key = _CN_NUMBER.sub(lambda m: str(_cn_to_int(m.group())), key)
    m = _NUMBER_UNIT.match(key)
    if m:
        try:
            value = Decimal(m.group(1)).normalize()
        except InvalidOperation:  # pragma: no cover - the regex only admits valid numbers
            return key
        unit = m.group(2).strip()
        unit = _UNIT_ALIASES.get(unit, unit)
        key = f"{value:f}{unit}"
    return key


def _blank_matches(given: str, accepted: list[str]) -> bool:
    """Equal keys, or the same number with the unit left out on one side (4 ↔ 4倍)."""
    got = fill_key(given)
    for alternative in accepted:
        want = fill_key(alternative)
        if got == want:
            return True
        g, w = _NUMBER_UNIT.match(got), _NUMBER_UNIT.match(want)
        if (
            g
            and w
            and Decimal(g.group(1)) == Decimal(w.group(1))
            and not (g.group(2) and w.group(2))
        ):
            return True
    return False


def _fill_blank(question: Question, answer: str, max_points: float) -> ObjectiveScore:
    blanks = question.blanks or [[str(question.answer)]]
    if len(blanks) == 1:
        parts = [answer]
    else:
        parts = [p for p in _ANSWER_SEPARATORS.split(answer.strip()) if p]
    if not any(p.strip() for p in parts):
        return _unreadable(max_points, "an answer", answer)
    hits = [
        i < len(parts) and _blank_matches(parts[i], accepted) for i, accepted in enumerate(blanks)
    ]
    reasons = []
    if len(blanks) > 1 and len(parts) != len(blanks):
        reasons.append(
            ReviewReason(
                code=ReviewCode.BLANK_COUNT,
                message=f"{len(blanks)} blanks expected, {len(parts)} answers given",
            )
        )
    points = round(max_points * sum(hits) / len(blanks), 4)
    return ObjectiveScore(points, max_points, all(hits), parts, reasons)
