"""A section's points: each question's from the rules that apply to it, and the totals checked.

Printed totals are checks, not decorations: parts that do not add up to their question's points,
or questions that do not add up to the section's ``共N分``, are entries of the import report.
"""

from __future__ import annotations

from collections.abc import Callable

from grader.bank.build import Draft
from grader.bank.keys import blank_count
from grader.bank.points import SectionRule, share_total
from grader.bank.report import Problem
from grader.bank.sections import SectionHeader
from grader.models import Question, QuestionType

Note = Callable[[int, Problem, str, Question | None], None]


def _question_points(draft: Draft, rule: SectionRule, note: Note) -> float | None:
    """Own note > sum of the sub-questions > 每空N分 × blanks > 每题N分."""
    q = draft.question
    parts = draft.sub_points
    parts_sum = sum(p for p in parts if p is not None) if parts and None not in parts else None
    if draft.own_points is not None:
        if parts_sum is not None and abs(parts_sum - draft.own_points) > 1e-6:
            message = (
                f"question {q.number}: its parts add up to {parts_sum:g} points, "
                f"it says {draft.own_points:g}"
            )
            note(draft.offset, Problem.POINTS_MISMATCH, message, q)
        return draft.own_points
    if parts_sum is not None:
        return parts_sum
    rate = draft.per_blank if draft.per_blank is not None else rule.per_blank
    if q.type is QuestionType.FILL_BLANK and rate is not None:
        return rate * (blank_count(q.stem) or len(q.blanks) or 1)
    return rule.each


def tally_points(
    rule: SectionRule, drafts: list[Draft], header: SectionHeader, note: Note, offset: int
) -> None:
    points = [_question_points(d, rule, note) for d in drafts]
    for draft, value in zip(drafts, share_total(rule, points), strict=True):
        draft.question.points = value
    declared = rule.declared_count
    if rule.total is None or (declared is not None and declared != len(drafts)):
        return  # a count that does not match is reported once, by the section
    got = [d.question.points for d in drafts]
    if None in got:
        return
    total = sum(p for p in got if p is not None)
    if abs(total - rule.total) > 1e-6:
        message = (
            f"section '{header.title}': the questions add up to {total:g} points, "
            f"the header says 共{rule.total:g}分"
        )
        note(offset, Problem.POINTS_MISMATCH, message, None)
