"""What a question's answer must conclude, found from its stem and reference by rules.

A true/false-with-explanation stem (请判断以下叙述是否正确) takes the reference's verdict; a
stem asking for one quantity (多少, how many, 时间复杂度) takes the reference's last formula or
big-O; a stem asking which option to use (宜采用何种) takes the option the reference adopts.
Anything less clear-cut derives nothing: a question asking for two values, a reference with
two complexities, a stem that asks no such thing. A derived conclusion is shown by
``grader rubric check`` and, like the derived rubric, is for an instructor to review.
"""

from __future__ import annotations

import re

from grader.engine.reading.conclusion_read import EARLY_CHARS, verdict_of
from grader.engine.reading.formulas import Expression, equivalent, parse, plain, runs, same_growth
from grader.models import Conclusion

_TRUE_FALSE = re.compile(
    r"判断|判斷|是否正确|是否正確|正确与否|正確與否|对错|對錯|true or false|true/false|"
    r"correct or incorrect",
    re.IGNORECASE,
)
_HOW_MANY = re.compile(r"多少|how many|how much", re.IGNORECASE)
_SEVERAL = re.compile(r"各|分别|分別|能否|每种|每種|respectively|each", re.IGNORECASE)
_COMPLEXITY = re.compile(r"复杂度|複雜度|complexity", re.IGNORECASE)
_BIG_O = re.compile(r"[OoΟ]\s*\(([^()]{1,24})\)")
_WHICH = re.compile(
    r"[宜应應]?(?:采用|採用|选用|選用|选择|選擇|使用)(?:何种|何種|哪种|哪種|哪一种|哪一種)"
)
_ADOPTED = re.compile(r"(?:采用|採用|选用|選用|选择|選擇|使用)([^，。,；;、\s]{2,12})")
# Options of a choice that are each other's alternatives, each with its usual wordings.
OPTIONS: tuple[tuple[str, ...], ...] = (
    (
        "链式存储结构",
        "链式存储",
        "链式结构",
        "链表",
        "链式",
        "鏈式存儲結構",
        "鏈式存儲",
        "鏈表",
        "linked list",
    ),
    ("顺序存储结构", "顺序存储", "顺序结构", "顺序表", "数组", "順序存儲結構", "順序表", "array"),
)


def derive_conclusion(stem: str, reference: str | None, language: str) -> Conclusion | None:
    """The conclusion the reference draws for this stem, or None when the rules see none."""
    if not reference or not reference.strip():
        return None
    if _TRUE_FALSE.search(stem):
        return _verdict(reference, language)
    if _WHICH.search(stem):
        return _choice(reference)
    asks = _HOW_MANY.findall(stem)
    if len(asks) != 1 or _SEVERAL.search(stem):
        return None
    if _COMPLEXITY.search(stem):
        return _complexity(reference)
    return _value(stem, reference)


def _verdict(reference: str, language: str) -> Conclusion | None:
    found = verdict_of(reference)
    if found is None or found[1] >= EARLY_CHARS:
        return None
    words = ("正确", "错误") if language == "zh" else ("true", "false")
    return Conclusion(kind="verdict", expected=words[0] if found[0] else words[1])


def _complexity(reference: str) -> Conclusion | None:
    distinct: list[Expression] = []
    for inner in _BIG_O.findall(plain(reference)):
        expression = parse(inner)
        if expression is None:
            return None
        if not any(same_growth(expression, d) for d in distinct):
            distinct.append(expression)
    if len(distinct) != 1:
        return None
    return Conclusion(kind="complexity", expected=f"O({distinct[0].text})")


def _value(stem: str, reference: str) -> Conclusion | None:
    """The reference's last formula that the stem does not itself state."""
    given = [e for e in map(parse, runs(plain(stem))) if e is not None]
    found = None
    for candidate in runs(plain(reference)):
        expression = parse(candidate)
        if expression is None or any(equivalent(expression, g) for g in given):
            continue
        found = expression
    if found is None:
        return None
    return Conclusion(kind="formula" if found.symbols else "value", expected=found.text)


def _choice(reference: str) -> Conclusion | None:
    adopted = _ADOPTED.search(reference)
    if adopted is None:
        return None
    phrase = adopted.group(1)
    for i, group in enumerate(OPTIONS):
        if any(term in phrase for term in group):
            others = [t for j, g in enumerate(OPTIONS) if j != i for t in g]
            return Conclusion(
                kind="choice",
                expected=group[0],
                accepted=list(group[1:]),
                wrong=others,
            )
    return Conclusion(kind="choice", expected=phrase)
