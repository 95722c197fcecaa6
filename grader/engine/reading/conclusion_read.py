"""ConclusionRead a student's conclusion by rules: a verdict, a value or formula, a big-O, a choice.

Each reading is match / mismatch / undecided with the span it rests on and a confidence.
Rules decide only what they can read plainly; anything else is ``undecided`` (an instructor
looks), never a guess that costs a student points. Every pattern is a literal alternation or
a bounded character class over student text: linear work, no nested quantifiers.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from grader.engine.reading.formulas import Expression, equivalent, parse, plain, runs, same_growth
from grader.models import Conclusion
from grader.models.details import ConclusionDecision as Decision

EVIDENCE_CHARS = 80
EARLY_CHARS = 24  # a verdict this close to the start is the answer's own, not a side remark


class ConclusionRead(BaseModel):
    """What the rules read of one answer's conclusion."""

    decision: Decision
    read: str | None = None  # the student's conclusion as read ("false", "2^n-1", ...)
    evidence: str = ""  # the sentence it was read from
    confidence: float = 0.0
    by: Literal["rules", "judge"] = "rules"  # the judge reads what the rules leave undecided


UNDECIDED = ConclusionRead(decision="undecided")

# --- verdicts -------------------------------------------------------------------------------

_FALSE = [
    "不完全正确",
    "不完全正確",
    "不一定正确",
    "不一定正確",
    "不正确",
    "不正確",
    "不对",
    "不對",
    "错误",
    "錯誤",
    "有误",
    "有誤",
    "不成立",
    "不一定",
    "未必",
    "并非",
    "並非",
    "说法错",
    "說法錯",
    "是错的",
    "是錯的",
    "错了",
    "錯了",
    "看情况",
    "看情況",
    "视情况",
    "視情況",
    "×",
    "✗",
    "✘",
]
_TRUE = ["正确", "正確", "是对的", "是對的", "没错", "沒錯", "√", "✓", "✔"]
# Words that contain a verdict word without being one: skipped where they stand.
_NEUTRAL = [
    "是否正确",
    "是否正確",
    "正确与否",
    "正確與否",
    "是否错误",
    "是否錯誤",
    "正确地",
    "正確地",
    "正确性",
    "正確性",
    "对不对",
    "對不對",
    "能否正确",
    "能否正確",
]
_ENGLISH_FALSE = ("not necessarily", "not always", "not true", "not correct", "incorrect",
                  "false", "wrong")  # fmt: skip
_ENGLISH_TRUE = ("true", "correct")
_VALUES: dict[str, bool | None] = {
    **dict.fromkeys(_NEUTRAL),
    **dict.fromkeys(_FALSE, False),
    **dict.fromkeys(_TRUE, True),
    **dict.fromkeys(_ENGLISH_FALSE, False),
    **dict.fromkeys(_ENGLISH_TRUE, True),
}
_CJK_WORDS = sorted([*_NEUTRAL, *_FALSE, *_TRUE], key=len, reverse=True)
_ENGLISH_WORDS = sorted([*_ENGLISH_FALSE, *_ENGLISH_TRUE], key=len, reverse=True)
_VERDICT = re.compile(
    "|".join([*map(re.escape, _CJK_WORDS), *(rf"\b{re.escape(w)}\b" for w in _ENGLISH_WORDS)]),
    re.IGNORECASE,
)
# 对 / 错 alone are verdicts only standing alone ("错，…", "…是错的" is above): elsewhere they
# are 对于, 错位, 相对 ...
_SINGLE = re.compile(r"(?:^|(?<=[\s。，,；;：:！!、]))([对對错錯])(?=[\s。，,；;！!、.]|$)")
_BARE_NO = re.compile(r"^\s*(?:答\s*[:：]?\s*)?(?:不是|否|no)(?=[\s。，,；;！!.]|$)", re.IGNORECASE)
_NEGATED = re.compile(r"(?:不是|并非|並非|不|非|not |isn't |is not )$", re.IGNORECASE)
_SENTENCE = re.compile(r"[^。；;！!？?\n]+")
# A formula may be broken over lines ("2\nn−1": a superscript lost in copying): kept together.
_STATEMENT = re.compile(r"[^。；;！!？?]+")
_CLAUSE = re.compile(r"[^，,：:。；;！!？?\n]+")


def verdict_of(text: str) -> tuple[bool, int, int] | None:
    """(the verdict, start, end) of the first decisive verdict in ``text``; None if none."""
    if m := _BARE_NO.match(text):
        return False, m.start(), m.end()
    found: list[tuple[int, int, bool]] = []
    for m in _VERDICT.finditer(text):
        value = _VALUES[m.group(0).lower()]
        if value is not None and not _product_sign(text, m.start(), m.end()):
            found.append((m.start(), m.end(), value))
            break
    if m := _SINGLE.search(text):
        found.append((m.start(), m.end(), m.group(1) in "对對"))
    if not found:
        return None
    start, end, value = min(found)
    if _NEGATED.search(text[max(0, start - 8) : start]):
        value = not value
    return value, start, end


def _product_sign(text: str, start: int, end: int) -> bool:
    """× or √ between figures (3×2, √n) is arithmetic, not a mark."""
    if end - start != 1 or text[start] not in "×√":
        return False
    around = text[max(0, start - 1) : start] + text[end : end + 1]
    return any(c.isalnum() for c in around)


def read_verdict(expected: bool, answer: str) -> ConclusionRead:
    found = verdict_of(answer)
    if found is None:
        return UNDECIDED
    value, start, _ = found
    return ConclusionRead(
        decision="match" if value == expected else "mismatch",
        read="true" if value else "false",
        evidence=_sentence_at(answer, start),
        confidence=0.95 if start < EARLY_CHARS else 0.75,
    )


# --- values, formulas and big-O ------------------------------------------------------------

_BIG_O = re.compile(r"[OoΟ]\s*\(([^()]{1,24})\)")


def read_value(expected: str, answer: str, complexity: bool = False) -> ConclusionRead:
    """Match: some formula of the answer equals the expected one. Mismatch: the answer's last
    formula (its conclusion, as written last) is comparable and differs. Else undecided."""
    target = _formula(expected, complexity)
    if target is None:
        return UNDECIDED
    last: tuple[str, str, bool | None] | None = None
    for sentence in _STATEMENT.findall(answer):
        text = plain(sentence)
        for candidate in _BIG_O.findall(text) if complexity else runs(text):
            expression = parse(candidate)
            same = None
            if expression is not None:
                same = (same_growth if complexity else equivalent)(target, expression)
            if same:
                return ConclusionRead(
                    decision="match", read=candidate, evidence=_clip(sentence), confidence=0.9
                )
            last = (candidate, sentence, same)
    if last is None or last[2] is not False:
        return UNDECIDED
    return ConclusionRead(
        decision="mismatch", read=last[0], evidence=_clip(last[1]), confidence=0.8
    )


def _formula(expected: str, complexity: bool) -> Expression | None:
    text = plain(expected)
    if complexity:
        inner = _BIG_O.search(text)
        return parse(inner.group(1)) if inner else parse(text)
    return parse(text)


# --- choices --------------------------------------------------------------------------------

_CHOICE_VERB = re.compile(r"采用|选用|選用|选择|選擇|宜|应|應|使用|建议|建議|choose|use", re.I)
_NEGATED_CHOICE = re.compile(r"(?:不|不宜|不用|不应|而非|而不是|非|not )$")


def read_choice(conclusion: Conclusion, answer: str) -> ConclusionRead:
    """The option the answer chooses: in its first sentence, else in a sentence that chooses
    (采用 / 宜 / use ...), whichever names the expected option or a wrong one alone."""
    right = [_key(t) for t in (conclusion.expected, *conclusion.accepted) if _key(t)]
    wrong = [_key(t) for t in conclusion.wrong if _key(t)]
    sentences = _SENTENCE.findall(answer)
    chosen = _CLAUSE.findall(answer)[:1] + sentences[:1]
    chosen += [s for s in sentences[1:] if _CHOICE_VERB.search(s)]
    for sentence in chosen:
        text = _key(sentence)
        has_right = _named(text, right)
        has_wrong = _named(text, wrong)
        if has_right != has_wrong:
            return ConclusionRead(
                decision="match" if has_right else "mismatch",
                read=next(t for t in (right if has_right else wrong) if t in text),
                evidence=_clip(sentence),
                confidence=0.85,
            )
    whole = _key(answer)
    if _named(whole, right) and not _named(whole, wrong):
        return ConclusionRead(decision="match", read=right[0], evidence="", confidence=0.7)
    return UNDECIDED


def _named(text: str, terms: list[str]) -> bool:
    """Some term occurs in ``text`` not right after a negation (不宜用顺序表)."""
    for term in terms:
        at = text.find(term)
        while at >= 0:
            if not _NEGATED_CHOICE.search(text[max(0, at - 4) : at]):
                return True
            at = text.find(term, at + 1)
    return False


def _key(text: str) -> str:
    """Lower case, no spaces, 储存 as 存储 (students write both)."""
    return "".join(text.lower().split()).replace("储存", "存储").replace("儲存", "存儲")


# --- dispatch -------------------------------------------------------------------------------


def read_conclusion(conclusion: Conclusion, answer: str) -> ConclusionRead:
    """The rules' reading of ``answer`` against what it must conclude."""
    if conclusion.kind == "verdict":
        expected = expected_verdict(conclusion)
        return UNDECIDED if expected is None else read_verdict(expected, answer)
    if conclusion.kind == "choice":
        return read_choice(conclusion, answer)
    complexity = conclusion.kind == "complexity"
    readings = [
        read_value(e, answer, complexity) for e in (conclusion.expected, *conclusion.accepted)
    ]
    return next((r for r in readings if r.decision == "match"), readings[0])


def expected_verdict(conclusion: Conclusion) -> bool | None:
    """The verdict the rubric expects (错误 / false / × ...), None if it names none."""
    found = verdict_of(conclusion.expected)
    return None if found is None else found[0]


def _sentence_at(text: str, at: int) -> str:
    for m in _SENTENCE.finditer(text):
        if m.start() <= at < m.end():
            return _clip(m.group(0))
    return _clip(text[at:])


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= EVIDENCE_CHARS else text[: EVIDENCE_CHARS - 1] + "…"
