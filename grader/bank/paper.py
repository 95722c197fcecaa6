"""Read an exam paper (plain text) into questions and an import report.

The paper is read as a small grammar of parts, each recognised by its own module before the
next one looks: the text is made regular (``source``), an answers part at the end is set aside
(``answer_part``), sections are found by their headers (``sections``), each section is split into
numbered questions or case blocks and a collected answer list (``blocks``, ``numbering``,
``collected``), each item becomes a question (``build``), and points come from every rule the
paper prints (``points``). What could not be read is an entry of the report, never a silent loss.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.bank.answer_part import AnswerPart, bare_title, find_answer_part
from grader.bank.blocks import SectionLayout, layout_section
from grader.bank.build import Draft, Place, build
from grader.bank.collected import Entries
from grader.bank.points import SectionRule, paper_total
from grader.bank.report import Problem, ReportEntry
from grader.bank.sections import CHOICE_TYPES, SectionHeader, find_headers
from grader.bank.source import PaperText, decode
from grader.bank.tally import tally_points
from grader.errors import BankError
from grader.models import Question


@dataclass
class PaperResult:
    title: str
    questions: list[Question] = field(default_factory=list)
    report: list[ReportEntry] = field(default_factory=list)


@dataclass
class _Section:
    header: SectionHeader
    ordinal: int
    start: int
    end: int
    layout: SectionLayout | None
    rule: SectionRule
    answers: Entries = field(default_factory=dict)
    explanations: Entries = field(default_factory=dict)
    drafts: list[Draft] = field(default_factory=list)


def read_paper(path: Path, slug: str) -> PaperResult:
    """Parse one paper file; ``slug`` prefixes the question ids (e.g. '000')."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BankError(f"cannot read paper: {exc.strerror}", file=path) from exc
    return parse_paper(decode(raw, path), file=path.name, slug=slug)


def parse_paper(text: str, *, file: str, slug: str) -> PaperResult:
    paper = PaperText(text, file)
    if not paper.text.strip():
        raise BankError("the paper is empty", file=file, line=1)
    return _PaperParser(paper, slug).run()


class _PaperParser:
    def __init__(self, paper: PaperText, slug: str):
        self.paper = paper
        self.text = paper.text
        self.slug = slug
        self.report: list[ReportEntry] = []

    def note(
        self, offset: int, problem: Problem, message: str, question: Question | None = None
    ) -> None:
        line = question.source.line if question and question.source else self.paper.line_of(offset)
        self.report.append(
            ReportEntry(
                file=self.paper.file,
                line=line,
                problem=problem,
                message=message,
                question=question.id if question else None,
                context=self.paper.around(offset),
            )
        )

    # --- top level -------------------------------------------------------------------------

    def run(self) -> PaperResult:
        part = find_answer_part(self.text)
        sections = self._sections(part.start if part else len(self.text))
        if part is not None and not _part_fits(part, sections):
            part, sections = None, self._sections(len(self.text))
        first = sections[0]
        title_end = (
            first.layout.items[0].start if first.ordinal == 0 and first.layout else first.start
        )
        title = self.text[:title_end].strip()
        _number_cases(sections)
        if part is not None:
            self._attach_part(part, sections)
        for section in sections:
            self._section(section)
        drafts = [d for s in sections for d in s.drafts]
        if not drafts:
            raise BankError("no questions found", file=self.paper.file, line=1)
        for section in sections:
            tally_points(section.rule, section.drafts, section.header, self.note, section.start)
        self._check_paper_total(title, drafts)
        self._mark_cut_off_end(drafts[-1].question)
        self._check_complete(drafts)
        self.report.sort(key=lambda e: e.line)
        return PaperResult(title, [d.question for d in drafts], self.report)

    def _sections(self, limit: int) -> list[_Section]:
        headers = [h for h in find_headers(self.text) if h.start < limit]
        if not headers:
            layout = layout_section(self.text, 0, limit)
            if layout is None or not layout.items:
                raise BankError(
                    "no section header (e.g. '一、单项选择题') and no numbered question found",
                    file=self.paper.file,
                    line=1,
                )
            untitled = SectionHeader(0, 0, "", None, None)
            return [_Section(untitled, 0, 0, limit, layout, SectionRule())]
        sections = []
        for ordinal, header in enumerate(headers, 1):
            end = headers[ordinal].start if ordinal < len(headers) else limit
            layout = layout_section(self.text, header.end, end)
            preamble = self.text[header.end : layout.preamble_end if layout else end]
            rule = SectionRule.parse(header.note + "\n" + preamble)
            sections.append(_Section(header, ordinal, header.start, end, layout, rule))
        return sections

    # --- answers collected at the end --------------------------------------------------------

    def _attach_part(self, part: AnswerPart, sections: list[_Section]) -> None:
        numbers = Counter(i.ordinal for s in sections if s.layout for i in s.layout.items)
        unique = all(count == 1 for count in numbers.values())
        for ref in part.refs:
            targets = _ref_targets(ref.numeral, ref.header, sections, unique)
            for number, (answer, offset) in ref.collected.answers.items():
                section = next((s for s in targets if _has_item(s, number)), None)
                if section is None:
                    message = f"collected answer for question {number}, which is missing"
                    self.note(offset, Problem.UNUSED_ANSWER, message)
                    continue
                section.answers.setdefault(number, (answer, offset))
                if number in ref.collected.explanations:
                    explanation = ref.collected.explanations[number]
                    section.explanations.setdefault(number, explanation)

    # --- one section -----------------------------------------------------------------------

    def _section(self, section: _Section) -> None:
        header, layout = section.header, section.layout
        if layout is None:
            body = self.text[header.end : section.end].strip()
            problem, what = (
                (Problem.IGNORED_TEXT, "has text but no numbered question")
                if body
                else (Problem.EMPTY_SECTION, "is empty")
            )
            self.note(header.end, problem, f"section '{header.title}' {what}")
            return
        raw = self.text[header.end : layout.preamble_end]
        preamble = raw.strip()
        if preamble and header.title and not _is_instruction(preamble):
            self.note(
                header.end + len(raw) - len(raw.lstrip()),
                Problem.IGNORED_TEXT,
                f"text before the first question ignored: {preamble[:60]!r}",
            )
        declared = section.rule.declared_count
        if declared is not None and declared != len(layout.items):
            message = (
                f"section '{header.title}' declares {declared} questions, found {len(layout.items)}"
            )
            self.note(header.start, Problem.COUNT_MISMATCH, message)
        answers = {**section.answers, **layout.collected.answers}
        explanations = {**section.explanations, **layout.collected.explanations}
        for item in layout.items:
            place = Place(
                file=self.paper.file,
                slug=self.slug,
                section_title=header.title,
                section_ordinal=section.ordinal,
                section_type=header.type,
                line=self.paper.line_of(item.start),
            )
            answer = answers.get(item.ordinal)
            explanation = explanations.get(item.ordinal)
            draft = build(
                place,
                item,
                self.text[item.body : item.end],
                answer[0] if answer else None,
                explanation[0] if explanation else None,
            )
            for problem, message in draft.problems:
                self.note(item.start, problem, _label(draft.question) + message, draft.question)
            section.drafts.append(draft)
        for number in layout.collected.answers.keys() - {i.ordinal for i in layout.items}:
            offset = layout.collected.answers[number][1]
            message = f"collected answer for question {number}, which is missing"
            self.note(offset, Problem.UNUSED_ANSWER, message)

    # --- the whole paper -------------------------------------------------------------------

    def _check_paper_total(self, title: str, drafts: list[Draft]) -> None:
        total = paper_total(title)
        points = [d.question.points for d in drafts]
        if total is None or any(p is None for p in points):
            return
        got = sum(p for p in points if p is not None)
        if abs(got - total) > 1e-6:
            message = f"the questions add up to {got:g} points, the paper says 满分 {total:g}"
            self.note(0, Problem.POINTS_MISMATCH, message)

    def _mark_cut_off_end(self, last: Question) -> None:
        """A paper that stops mid-question: keep the question, say it is incomplete."""
        tail = self.text.rstrip()
        cut = _looks_cut_off(tail[-400:])
        if last.type.objective:
            cut = cut and last.answer is None
        if cut or last.answer is None:
            last.incomplete = True
            message = f"question {last.number} is cut off at the end of the file"
            self.note(len(tail) - 1, Problem.CUT_OFF, message, last)

    def _check_complete(self, drafts: list[Draft]) -> None:
        for draft in drafts:
            q = draft.question
            if q.answer is None:
                what = "no answer key found" if q.type.objective else "no reference answer found"
                self.note(draft.offset, Problem.NO_KEY, _label(q) + what, q)
            if q.points is None:
                message = "no points: neither the question nor its section prints them"
                self.note(draft.offset, Problem.NO_POINTS, _label(q) + message, q)


# What a section says to students before its questions: how to answer, what it is worth.
_INSTRUCTION = re.compile(
    r"请|將|将|答题卡|答題卡|涂|打[“\"]?[√✓×]|括号内|括號內|填[在入写]|选出|選出|备选项|備選項"
    r"|只有一[个項项]|下列各|本[大小]?[题題]"
)


def _number_cases(sections: list[_Section]) -> None:
    """A case printed without a number is numbered by its place in its section (1, 2, …) unless
    that number is taken elsewhere in the paper: then it follows the question before it (a case
    after question 15 is 16, or the next free number), so a printed number names one question."""
    items = [i for s in sections if s.layout for i in s.layout.items]
    unnumbered = {id(i) for i in items if i.is_case and i.number.isdigit()}
    used = {i.number for i in items if id(i) not in unnumbered}
    last = 0
    for section in sections:
        if section.layout is None:
            continue
        numbered = []
        for item in section.layout.items:
            if id(item) in unnumbered and item.number in used:
                free = last + 1
                while str(free) in used:
                    free += 1
                item = replace(item, number=str(free))
            used.add(item.number)
            if item.number.isdigit():
                last = max(last, int(item.number))
            numbered.append(item)
        section.layout.items = numbered


def _is_instruction(text: str) -> bool:
    return SectionRule.parse(text).says_anything or bool(_INSTRUCTION.search(text))


def _label(q: Question) -> str:
    return f"question {q.number} in '{q.section}': " if q.section else f"question {q.number}: "


def _has_item(section: _Section, number: int) -> bool:
    layout = section.layout
    return layout is not None and any(i.ordinal == number for i in layout.items)


def _ref_targets(
    numeral: str | None, header: SectionHeader | None, sections: list[_Section], unique: bool
) -> list[_Section]:
    """The sections an end-part reference names: by numeral, by title, by type, or all."""
    if numeral is not None:
        return [s for s in sections if s.header.numeral == numeral]
    if header is not None:
        same_title = [s for s in sections if bare_title(s.header) == bare_title(header)]
        if same_title:
            return same_title
        if header.type is None:  # 选择题：1-5 … answers the choice sections
            return [s for s in sections if s.header.type in (*CHOICE_TYPES, None)]
        return [s for s in sections if s.header.type == header.type]
    return sections if unique else sections[-1:]


def _part_fits(part: AnswerPart, sections: list[_Section]) -> bool:
    """An answers part answers at least half the paper's questions, and most of its entries
    name a question that is there; a case's numbered reference answer right after
    ``参考答案`` does neither."""
    items = sum(len(s.layout.items) for s in sections if s.layout)
    numbers = Counter(i.ordinal for s in sections if s.layout for i in s.layout.items)
    unique = all(count == 1 for count in numbers.values())
    entries = matched = 0
    for ref in part.refs:
        targets = _ref_targets(ref.numeral, ref.header, sections, unique)
        for number in ref.collected.answers:
            entries += 1
            matched += any(_has_item(s, number) for s in targets)
    return matched * 2 >= items and matched >= entries * 0.8


_CLOSED = set("。！？!?.…）)」』】]}>`\"”'’")


def _looks_cut_off(tail: str) -> bool:
    if tail.count("```") % 2:
        return True
    if tail.count("{") > tail.count("}") or tail.count("（") > tail.count("）"):
        return True
    return bool(tail) and tail[-1] not in _CLOSED
