"""One question from its text: stem, options, key, explanation, and what its points rules need.

The text of an item is cut at its answer mark (``答案：``, ``【答案】``, ``参考答案：``…) and its
explanation mark (``解析：``, ``【解析】``…); what comes before is the stem with its options.
Whatever cannot be read — a key that names no option, a choice question without options — goes
to the import report with the question's line; the question itself is always kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from grader.bank import keys
from grader.bank.blocks import QuestionBlock
from grader.bank.lexicon import ANSWER_MARK, BLANK, EXPLAIN_AFTER_KEY, EXPLAIN_MARK, TF_MARK
from grader.bank.marks import choice_letters, true_false
from grader.bank.options import options_start, split_options
from grader.bank.points import per_blank, subquestion_points, take_own_points
from grader.bank.report import Problem
from grader.bank.sections import CHOICE_TYPES
from grader.models import Question, QuestionType, SourceRef
from grader.text import language_of

_TF_SCAFFOLD = re.compile(
    r"(?:正[确確]|[对對]|√)\s*[（(]\s*[)）]\s*(?:不正[确確]|[错錯][误誤]?|×)\s*[（(]\s*[)）]"
)
# Linear on any stem: runs around optional parts are possessive, and a pattern that may start
# in front of spaces starts only where they do ((?<!\s)), not again at each one.
_TF_TRAILING = re.compile(rf"[（(]\s*+({TF_MARK})\s*+[)）]\s*+(?:[。.]\s*+)?$")
_TF_LEADING = re.compile(rf"^\s*+[（(]\s*+({TF_MARK})\s*+[)）]\s*+")
_TRAILING_PARENS = re.compile(r"(?<!\s)\s*+[（(]\s*+[)）]\s*+$")
_STEM_LETTERS = re.compile(r"[（(]\s*+([A-H](?:\s*+(?:[,，、]\s*+)?[A-H]){0,7})\s*+[)）]")


@dataclass
class Regions:
    """An item's text cut into stem, answer and explanation."""

    stem: str
    answer: str | None
    explanation: str | None


def regions(chunk: str) -> Regions:
    answer_mark = ANSWER_MARK.search(chunk)
    explain = EXPLAIN_AFTER_KEY if answer_mark else EXPLAIN_MARK
    explain_mark = explain.search(chunk, answer_mark.end() if answer_mark else 0)
    marks = [m.start() for m in (answer_mark, explain_mark) if m is not None]
    stem = chunk[: min(marks) if marks else len(chunk)].strip()
    answer = None
    if answer_mark:
        answer = chunk[answer_mark.end() : explain_mark.start() if explain_mark else len(chunk)]
        answer = answer.strip()
    explanation = chunk[explain_mark.end() :].strip() if explain_mark else None
    return Regions(stem, answer, explanation or None)


def _collected_regions(entry: str) -> Regions:
    """A collected entry (``B``, ``答：…``, ``B 解析：…``) as answer and explanation."""
    lead = ANSWER_MARK.match(entry.strip())
    text = entry.strip()[lead.end() :] if lead else entry
    return regions("答案：" + text)


@dataclass
class Draft:
    """A question being built, with what the points rules and the report need from its text."""

    question: Question
    offset: int = 0  # where the item starts in the paper's text
    own_points: float | None = None
    sub_points: list[float | None] = field(default_factory=list)
    per_blank: float | None = None
    problems: list[tuple[Problem, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Place:
    """Where an item sits: the paper, its section and the item's first line."""

    file: str
    slug: str
    section_title: str
    section_ordinal: int
    section_type: QuestionType | None
    line: int


def build(
    place: Place,
    item: QuestionBlock,
    chunk: str,
    collected_answer: str | None,
    collected_explanation: str | None,
) -> Draft:
    parts = regions(chunk)
    if parts.answer is None and collected_answer is not None:
        collected = _collected_regions(collected_answer)
        parts.answer = collected.answer
        parts.explanation = parts.explanation or collected.explanation
    parts.explanation = parts.explanation or collected_explanation
    own, stem_region = take_own_points(parts.stem)
    if item.is_case:
        stem_region = stem_region.lstrip(":：.．、 ")  # 案例一（20分）：…
    cut = options_start(stem_region)
    if own is None and cut is not None:  # 题干（2分）A.… B.…: the note ends the stem
        own, head = take_own_points(stem_region[:cut])
        if own is not None:
            stem_region = head + "\n" + stem_region[cut:]
    draft = Draft(
        question=Question(
            id=f"{place.slug}-s{place.section_ordinal}-q{item.ordinal}",
            number=item.number,
            section=place.section_title,
            type=QuestionType.SHORT_ANSWER,
            stem=stem_region,
            source=SourceRef(file=place.file, line=place.line),
        ),
        offset=item.start,
        own_points=own,
        sub_points=subquestion_points(stem_region, numbered_lists=item.is_case),
        per_blank=per_blank(stem_region),
    )
    qtype = place.section_type
    stem, options = split_options(stem_region)
    if options and qtype is not None and qtype not in CHOICE_TYPES:
        stem, options = stem_region, {}  # letters in a fill-in or essay stem are text
    if qtype is None:
        qtype = _infer_type(stem_region, options, parts.answer, item.lead)
    q = draft.question
    q.type, q.stem, q.options = qtype, stem, options
    if qtype in CHOICE_TYPES:
        _choice(draft, stem_region, parts)
    elif qtype is QuestionType.TRUE_FALSE:
        _true_false(draft, item.lead, parts)
    elif qtype is QuestionType.FILL_BLANK:
        q.answer = parts.answer or None
        q.blanks = keys.blanks(q.stem, q.answer) if q.answer else []
    else:
        q.answer = parts.answer or None
    q.explanation = parts.explanation or None
    if item.material:
        q.stem = f"{item.material}\n{q.stem}"
    if not q.stem:
        draft.problems.append((Problem.EMPTY_STEM, "empty question text"))
    q.language = language_of(q.stem + (q.answer if isinstance(q.answer, str) else ""))
    return draft


def _stem_answer(region: str) -> tuple[str | None, str]:
    """``下列…是（ B ）A.… B.…``: letters in the stem's brackets, followed by the options."""
    for m in _STEM_LETTERS.finditer(region):
        _, options = split_options(region[m.end() :])
        letters = choice_letters(m.group(1))
        if len(options) >= 2 and letters and set(letters) <= options.keys():
            return letters, region[: m.start()] + "（ ）" + region[m.end() :]
    return None, region


def _choice(draft: Draft, stem_region: str, parts: Regions) -> None:
    q = draft.question
    if parts.answer is None:
        letters, without = _stem_answer(stem_region)
        if letters is not None:
            q.stem, q.options = split_options(without)
            q.answer = letters
    q.stem = _TRAILING_PARENS.sub("", q.stem)
    if len(q.options) < 2:
        draft.problems.append((Problem.NO_OPTIONS, "choice question without options A./B./…"))
    if not parts.answer:
        return
    answer, rest = keys.choice_key(parts.answer)
    parts.explanation = parts.explanation or rest
    if answer is None:
        message = f"answer {parts.answer[:30]!r} names no option letter"
        draft.problems.append((Problem.BAD_KEY, message))
        return
    q.answer = answer
    if q.options and not set(answer) <= q.options.keys():
        draft.problems.append((Problem.BAD_KEY, f"answer {answer} names a missing option"))
    if q.type is QuestionType.SINGLE_CHOICE and len(answer) > 1:
        message = f"single-choice answer has several letters {answer}"
        draft.problems.append((Problem.BAD_KEY, message))


def _true_false(draft: Draft, lead: str | None, parts: Regions) -> None:
    q = draft.question
    q.stem = _TF_SCAFFOLD.sub("", q.stem).strip()
    for pattern in (_TF_TRAILING, _TF_LEADING):
        inline = pattern.search(q.stem)
        if inline:
            q.answer = true_false(inline.group(1))
            q.stem = (q.stem[: inline.start()] + q.stem[inline.end() :]).strip()
            break
    if lead is not None and q.answer is None:
        q.answer = true_false(lead)
    if parts.answer:
        value, rest = keys.true_false_key(parts.answer)
        parts.explanation = parts.explanation or rest
        if value is None:
            message = f"answer {parts.answer[:30]!r} is not true/false"
            draft.problems.append((Problem.BAD_KEY, message))
        else:
            q.answer = value


def _infer_type(
    stem: str, options: dict[str, str], answer: str | None, lead: str | None
) -> QuestionType:
    """Type of a question under a header that does not say (选择题) or no header at all."""
    if options:
        letters = keys.choice_key(answer or "")[0] or _stem_answer(stem)[0] or ""
        return QuestionType.MULTIPLE_CHOICE if len(letters) > 1 else QuestionType.SINGLE_CHOICE
    if (
        lead is not None
        or _TF_SCAFFOLD.search(stem)
        or _TF_TRAILING.search(stem)
        or (answer and keys.true_false_key(answer)[0] is not None)
    ):
        return QuestionType.TRUE_FALSE
    if BLANK.search(stem):
        return QuestionType.FILL_BLANK
    return QuestionType.SHORT_ANSWER
