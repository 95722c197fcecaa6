"""Read an exam paper (plain text) into questions.

Papers are messy: questions run together on one line or sit one per paragraph, numbering
restarts per section or runs on, answers are inline (``答案：B``, ``（√）``) or collected after a
section (``答案：`` then ``1.D 2.D …``, then ``解析：`` per number). The parser therefore works
on the whole text with offsets, and finds each question by looking for the *next expected
number* rather than any number: that is what keeps ``PyTorch2.1``, ``A100`` or ``=8。`` from
being read as question starts.

Problems are reported as warnings with a line number; nothing is dropped silently.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from grader.bank.marks import choice_letters, true_false
from grader.bank.sections import SectionHeader, find_headers
from grader.errors import BankError
from grader.models import Question, QuestionType, SourceRef
from grader.text import clean, language_of


class BankWarning(BaseModel):
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


ANSWER_MARK = re.compile(
    r"【\s*(?:参考|參考|正确|正確|标准|標準)?答案\s*】\s*[:：]?"
    r"|(?:参考|參考|正确|正確|标准|標準)?答案\s*[:：]"
)
EXPLAIN_MARK = re.compile(r"【\s*(?:答案)?解析\s*】\s*[:：]?|(?:答案)?解析\s*[:：]")
_TF_SCAFFOLD = re.compile(
    r"(?:正[确確]|[对對]|√)\s*[（(]\s*[)）]\s*(?:不正[确確]|[错錯][误誤]?|×)\s*[（(]\s*[)）]"
)
_TF_INLINE = re.compile(r"[（(]\s*([√×✓✗✔✘对错對錯]|正[确確]|[错錯][误誤])\s*[)）]\s*[。.]?\s*$")
_BLANK = re.compile(r"_{2,}|＿{2,}|[（(]\s*[)）]")
_TRAILING_PARENS = re.compile(r"\s*[（(]\s*[)）]\s*$")
_INLINE_POINTS = re.compile(r"^\s*[（(]\s*(\d+(?:\.\d+)?)\s*分\s*[)）]")
_CASE_NUMBER = re.compile(r"案例\s*(\d+|[一二三四五六七八九十])\s*[.．、:：]?")
_CN_NUMERALS = "一二三四五六七八九十"
_CN_DIGITS = {c: i + 1 for i, c in enumerate(_CN_NUMERALS)}
_LETTERS = "ABCDEFGH"
_CLOSED = set("。！？!?.…）)」』】]}>`\"”'’")


@dataclass
class _Found:
    """A question located in the text: its marker span and printed number."""

    start: int
    body_start: int
    number: str
    ordinal: int


@dataclass
class PaperResult:
    title: str
    questions: list[Question] = field(default_factory=list)
    warnings: list[BankWarning] = field(default_factory=list)


def read_paper(path: Path, slug: str) -> PaperResult:
    """Parse one paper file; ``slug`` prefixes the question ids (e.g. '000')."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BankError(f"cannot read paper: {exc.strerror}", file=path) from exc
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            text = raw.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    else:  # pragma: no cover - gb18030 decodes nearly anything
        raise BankError("not UTF-8 or GB18030 text", file=path)
    return parse_paper(text, file=path.name, slug=slug)


def parse_paper(text: str, *, file: str, slug: str) -> PaperResult:
    # Clean line by line so offsets still map to the printed line numbers.
    text = "\n".join(clean(line) for line in text.replace("\r\n", "\n").split("\n"))
    if not text.strip():
        raise BankError("the paper is empty", file=file, line=1)
    return _PaperParser(text, file, slug).run()


class _PaperParser:
    def __init__(self, text: str, file: str, slug: str):
        self.text = text
        self.file = file
        self.slug = slug
        self._line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
        self.result = PaperResult(title="")

    # --- helpers ---------------------------------------------------------------------------

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self._line_starts, offset)

    def warn(self, offset: int, message: str) -> None:
        self.result.warnings.append(
            BankWarning(file=self.file, line=self.line_of(offset), message=message)
        )

    # --- top level -------------------------------------------------------------------------

    def run(self) -> PaperResult:
        headers = find_headers(self.text)
        if headers:
            self.result.title = self.text[: headers[0].start].strip()
            spans = [
                (h, h.end, headers[i + 1].start if i + 1 < len(headers) else len(self.text))
                for i, h in enumerate(headers)
            ]
            for ordinal, (header, start, end) in enumerate(spans, 1):
                self._section(header, ordinal, start, end)
        else:
            first = _first_question(self.text, 0, len(self.text))
            if first is None:
                raise BankError(
                    "no section header (e.g. '一、单项选择题') and no numbered question found",
                    file=self.file,
                    line=1,
                )
            self.result.title = self.text[: first.start].strip()
            untitled = SectionHeader(first.start, first.start, "", None, None, None, None)
            self._section(untitled, 0, first.start, len(self.text))
        if not self.result.questions:
            raise BankError("no questions found", file=self.file, line=1)
        self._mark_cut_off_end()
        return self.result

    def _section(self, header: SectionHeader, ordinal: int, start: int, end: int) -> None:
        first = _first_question(self.text, start, end)
        if first is None:
            if self.text[start:end].strip():
                self.warn(start, f"section '{header.title}' has text but no numbered question")
            else:
                self.warn(start, f"section '{header.title}' is empty")
            return
        leading = self.text[start : first.start].strip()
        if leading:
            self.warn(start, f"text before the first question ignored: {leading[:60]!r}")

        collected = self._collected_block(first, end)
        questions_end = collected[0] if collected else end
        found = _scan_questions(self.text, first, questions_end)

        answers: dict[str, tuple[str, int]] = {}
        explanations: dict[str, tuple[str, int]] = {}
        if collected:
            answers, explanations = self._collected_lists(collected, end, found[0].ordinal)

        declared = header.declared_count
        if declared is None and header.points_each and header.declared_total:
            declared = round(header.declared_total / header.points_each)
        if declared is not None and declared != len(found):
            self.warn(
                header.start,
                f"section '{header.title}' declares {declared} questions, found {len(found)}",
            )
        points = header.points_each
        if points is None and header.declared_total and declared:
            points = header.declared_total / declared

        bounds = [f.start for f in found[1:]] + [questions_end]
        for item, stop in zip(found, bounds, strict=True):
            key = str(item.ordinal)
            self._question(
                header,
                ordinal,
                item,
                stop,
                points,
                answers.get(key),
                explanations.get(key),
            )
        for key in answers.keys() - {str(f.ordinal) for f in found}:
            self.warn(answers[key][1], f"collected answer for question {key}, which is missing")

    # --- collected answers -----------------------------------------------------------------

    def _collected_block(self, first: _Found, end: int) -> tuple[int, int] | None:
        """Find an ``答案：`` followed by a numbered list that starts at the section's first number."""
        n = first.ordinal
        pattern = re.compile(rf"(?:{ANSWER_MARK.pattern})\s*(?P<list>{n}\s*[.．、](?!\d))")
        for m in pattern.finditer(self.text, first.body_start, end):
            list_start = m.start("list")
            items = _numbered_items(self.text, list_start, end, n)
            questions = _scan_questions(self.text, first, m.start())
            # A reference answer may itself be a numbered list: a collected block must have one
            # entry per question before it, and more than one question.
            if len(questions) > 1 and len(items) >= len(questions) * 0.8:
                return m.start(), list_start
        return None

    def _collected_lists(
        self, block: tuple[int, int], end: int, first_number: int
    ) -> tuple[dict[str, tuple[str, int]], dict[str, tuple[str, int]]]:
        _, list_start = block
        explain = re.compile(rf"(?:{EXPLAIN_MARK.pattern})\s*(?={first_number}\s*[.．、])")
        m = explain.search(self.text, list_start, end)
        answers_end = m.start() if m else end
        answers = _numbered_items(self.text, list_start, answers_end, first_number)
        explanations = _numbered_items(self.text, m.end(), end, first_number) if m else {}
        return answers, explanations

    # --- one question ----------------------------------------------------------------------

    def _question(
        self,
        header: SectionHeader,
        section_ordinal: int,
        item: _Found,
        stop: int,
        section_points: float | None,
        collected_answer: tuple[str, int] | None,
        collected_explanation: tuple[str, int] | None,
    ) -> None:
        chunk = self.text[item.body_start : stop]
        where = item.start
        answer_mark = ANSWER_MARK.search(chunk)
        explain_mark = EXPLAIN_MARK.search(chunk, answer_mark.end() if answer_mark else 0)
        marks = [m.start() for m in (answer_mark, explain_mark) if m is not None]
        stem_end = min(marks) if marks else len(chunk)
        stem_region = chunk[:stem_end].strip()
        answer_text = None
        if answer_mark:
            answer_end = explain_mark.start() if explain_mark else len(chunk)
            answer_text = chunk[answer_mark.end() : answer_end].strip()
        explanation = chunk[explain_mark.end() :].strip() if explain_mark else None
        if collected_answer is not None:
            answer_text = answer_text or collected_answer[0]
        if collected_explanation is not None:
            explanation = explanation or collected_explanation[0]

        points = section_points
        inline_points = _INLINE_POINTS.match(stem_region)
        if inline_points:
            points = float(inline_points.group(1))
            stem_region = stem_region[inline_points.end() :].strip()

        qtype = header.type
        stem, options = _split_options(stem_region)
        choice = (QuestionType.SINGLE_CHOICE, QuestionType.MULTIPLE_CHOICE)
        if options and qtype is not None and qtype not in choice:
            options = {}  # letters in a fill-in or essay stem are text, not options
            stem = stem_region
        if qtype is None:
            qtype = self._infer_type(stem_region, options, answer_text)

        answer: str | bool | None = None
        blanks: list[list[str]] = []
        label = f"question {item.number} in '{header.title}'"
        if qtype in (QuestionType.SINGLE_CHOICE, QuestionType.MULTIPLE_CHOICE):
            stem = _TRAILING_PARENS.sub("", stem)
            if len(options) < 2:
                self.warn(where, f"{label}: choice question without options A./B./…")
            if answer_text:
                answer = choice_letters(answer_text)
                if answer is None:
                    self.warn(where, f"{label}: answer {answer_text[:30]!r} names no option letter")
                elif options and not set(answer) <= options.keys():
                    self.warn(where, f"{label}: answer {answer} names a missing option")
                if answer and qtype is QuestionType.SINGLE_CHOICE and len(answer) > 1:
                    self.warn(where, f"{label}: single-choice answer has several letters {answer}")
        elif qtype is QuestionType.TRUE_FALSE:
            stem = _TF_SCAFFOLD.sub("", stem).strip()
            inline = _TF_INLINE.search(stem)
            if inline:
                answer = true_false(inline.group(1))
                stem = stem[: inline.start()].rstrip()
            if answer_text:
                answer = true_false(answer_text)
                if answer is None:
                    self.warn(where, f"{label}: answer {answer_text[:30]!r} is not true/false")
        elif qtype is QuestionType.FILL_BLANK:
            answer = answer_text or None
            if answer:
                blanks = _blanks(stem, answer)
        else:
            answer = answer_text or None

        if answer is None and qtype.objective:
            self.warn(where, f"{label}: no answer key found")
        if not stem:
            self.warn(where, f"{label}: empty question text")

        self.result.questions.append(
            Question(
                id=f"{self.slug}-s{section_ordinal}-q{item.ordinal}",
                number=item.number,
                section=header.title,
                type=qtype,
                stem=stem,
                options=options,
                answer=answer,
                blanks=blanks,
                explanation=explanation or None,
                points=points,
                language=language_of(stem + (answer if isinstance(answer, str) else "")),
                source=SourceRef(file=self.file, line=self.line_of(item.start)),
            )
        )

    def _infer_type(self, stem: str, options: dict[str, str], answer: str | None) -> QuestionType:
        """Type of a question under a header that does not say (选择题) or no header at all."""
        if options:
            letters = choice_letters(answer or "") or ""
            return QuestionType.MULTIPLE_CHOICE if len(letters) > 1 else QuestionType.SINGLE_CHOICE
        if (
            _TF_SCAFFOLD.search(stem)
            or _TF_INLINE.search(stem)
            or (answer and true_false(answer) is not None)
        ):
            return QuestionType.TRUE_FALSE
        if _BLANK.search(stem):
            return QuestionType.FILL_BLANK
        return QuestionType.SHORT_ANSWER

    # --- truncation ------------------------------------------------------------------------

    def _mark_cut_off_end(self) -> None:
        """A paper that stops mid-question: keep the question, say it is incomplete."""
        last = self.result.questions[-1]
        tail = self.text.rstrip()
        cut = _looks_cut_off(tail[-400:])
        if last.type.objective:
            cut = cut and last.answer is None
        if cut or last.answer is None:
            last.incomplete = True
            self.warn(len(tail) - 1, f"question {last.number} is cut off at the end of the file")


# --- scanning ------------------------------------------------------------------------------


def _number_pattern(n: int, *, case: bool) -> re.Pattern[str]:
    """Question number ``n`` followed by a delimiter, not part of a decimal like 2.1.

    Case studies are numbered 案例1, 案例2: their reference answers' own 1. 2. lists must not
    be read as new questions.
    """
    if case:
        numeral = f"(?:{n}|{_CN_NUMERALS[n - 1]})" if n <= 10 else str(n)
        return re.compile(rf"案例\s*{numeral}\s*[.．、:：]?")
    return re.compile(rf"(?<![\d.]){n}\s*[.．、](?!\d)")


def _strong_boundary(text: str, pos: int) -> bool:
    """True when the character before ``pos`` cannot belong to a word or formula."""
    if pos == 0:
        return True
    prev = text[pos - 1]
    return not (prev.isascii() and (prev.isalnum() or prev in "._)]}%'\"-"))


_FIRST_AT_START = re.compile(
    rf"\s*(?:(?P<n>\d{{1,3}})\s*[.．、](?!\d)|案例\s*(?P<case>\d+|[{_CN_NUMERALS}])\s*[.．、:：]?)"
)
_FIRST_ANYWHERE = re.compile(r"(?<![\d.])(?P<n>\d{1,3})\s*[.．、](?!\d)")


def _first_question(text: str, start: int, end: int) -> _Found | None:
    """The section's first question: a number (any, numbering may run on) or 案例N."""
    m = _FIRST_AT_START.match(text, start, end)
    if m is None:
        m = _FIRST_ANYWHERE.search(text, start, end)
        if m is None or not _strong_boundary(text, m.start()):
            return None
    case = m.groupdict().get("case")
    digits = case or m.group("n")
    ordinal = int(digits) if digits.isdigit() else _CN_DIGITS[digits]
    number = f"案例{digits}" if case else digits
    marker_start = m.start() + len(m.group()) - len(m.group().lstrip())
    return _Found(start=marker_start, body_start=m.end(), number=number, ordinal=ordinal)


def _scan_questions(text: str, first: _Found, end: int) -> list[_Found]:
    """Follow the numbering n, n+1, … from ``first`` up to ``end``."""
    found = [first]
    while True:
        current = found[-1]
        nxt = current.ordinal + 1
        pattern = _number_pattern(nxt, case=first.number.startswith("案例"))
        chosen = None
        for m in pattern.finditer(text, current.body_start, end):
            before = text[current.body_start : m.start()]
            # After an answer marker, a number may follow a letter or digit directly
            # ("答案：C2.在…", "答案：backward()6.…"); elsewhere it needs a clean boundary.
            if _strong_boundary(text, m.start()) or ANSWER_MARK.search(before):
                chosen = m
                break
        if chosen is None:
            return found
        is_case = first.number.startswith("案例")
        found.append(
            _Found(
                start=chosen.start(),
                body_start=chosen.end(),
                number=f"案例{nxt}" if is_case else str(nxt),
                ordinal=nxt,
            )
        )


def _numbered_items(text: str, start: int, end: int, first: int) -> dict[str, tuple[str, int]]:
    """A run-on list ``1.D 2.D …`` or one item per line: number → (text, offset)."""
    positions: list[tuple[int, int, int]] = []
    n, cursor = first, start
    while True:
        m = re.compile(rf"(?<![\d.]){n}\s*[.．、](?!\d)").search(text, cursor, end)
        if m is None:
            break
        positions.append((n, m.start(), m.end()))
        n, cursor = n + 1, m.end()
    items = {}
    for i, (number, pos, body) in enumerate(positions):
        stop = positions[i + 1][1] if i + 1 < len(positions) else end
        items[str(number)] = (text[body:stop].strip(), pos)
    return items


def _split_options(region: str) -> tuple[str, dict[str, str]]:
    """Split ``stem A.x B.y …`` into the stem and its options, letters in order."""
    # "A." right after a word ("dropA.0.5%") is an option only when nothing cleaner is there
    # ("LLaMA.cpp" is not option A), so try clean candidates first.
    candidates = list(re.finditer(r"A\s*[.．、:：]|[（(]A[)）]", region))
    candidates.sort(key=lambda m: not _strong_boundary(region, m.start()))
    marks: list[tuple[int, int, int]] = []
    first = None
    for first in candidates:
        marks = [(0, first.start(), first.end())]
        for i, letter in enumerate(_LETTERS[1:], 1):
            pattern = rf"{letter}\s*[.．、:：]|[（(]{letter}[)）]"
            m = re.compile(pattern).search(region, marks[-1][2])
            if m is None:
                break
            marks.append((i, m.start(), m.end()))
        if len(marks) >= 2:
            break
    if len(marks) < 2:
        return region, {}
    options = {}
    for j, (i, _, body) in enumerate(marks):
        stop = marks[j + 1][1] if j + 1 < len(marks) else len(region)
        options[_LETTERS[i]] = region[body:stop].strip()
    return region[: first.start()].strip(), options


def _blanks(stem: str, answer: str) -> list[list[str]]:
    """Accepted alternatives per blank: ``；``-separated when the stem has several blanks."""
    count = len(_BLANK.findall(stem)) or 1
    parts = [answer]
    if count > 1:
        for sep in ("；", ";", "，", ",", "、", " "):
            candidate = [p.strip() for p in answer.split(sep) if p.strip()]
            if len(candidate) == count:
                parts = candidate
                break
    return [
        [alt.strip() for alt in re.split(r"\s*(?:或者|或|\|)\s*", p) if alt.strip()] for p in parts
    ]


def _looks_cut_off(tail: str) -> bool:
    if tail.count("```") % 2:
        return True
    if tail.count("{") > tail.count("}") or tail.count("（") > tail.count("）"):
        return True
    return bool(tail) and tail[-1] not in _CLOSED
