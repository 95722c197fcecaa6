"""A question's answers in groups of answers that say nearly the same thing, for grading a
group at once: the engine's answer groups (``engine.signals.cohort.group_answers`` over the answers'
vectors, the signals' ``group_cosine``), computed over all of the question's answers when the
page is read, each with its most central answer as the representative and every other
member's differences from it marked. Without an embedding model, the groups the grades'
signals recorded, if any.

Marking differences compares characters; an answer is untrusted and may be long, so only
the first ``DIFF_CHARS`` of each are compared, and only a group's first ``DIFF_MEMBERS``
members (the rest is shown as it is).
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grader.service.store import AnswerRow

if TYPE_CHECKING:
    from grader.api.instructor.context import Pages

DIFF_CHARS = 1500  # difflib is quadratic in the worst case: two such texts take ~0.1 s
DIFF_MEMBERS = 30  # a group's members marked; the rest of a large group are shown as they are


@dataclass(frozen=True)
class Member:
    row: AnswerRow
    segments: list[tuple[str, str]]  # (same | added | missing, text) against the representative


@dataclass(frozen=True)
class Group:
    id: str
    representative: AnswerRow
    members: list[Member]  # the others, closest first as the engine lists them

    @property
    def rows(self) -> list[AnswerRow]:
        return [self.representative, *(m.row for m in self.members)]

    @property
    def size(self) -> int:
        return 1 + len(self.members)

    @property
    def scored(self) -> int:
        return sum(r.human is not None for r in self.rows)


def question_groups(ctx: Pages, rows: list[AnswerRow]) -> list[Group] | None:
    """The answers' groups, largest first (singles last); None when they cannot be grouped
    (no embedding model, and no grade recorded a group)."""
    if not rows:
        return []
    members = _by_vectors(ctx, rows) if ctx.embedder is not None else _by_signals(rows)
    if members is None:
        return None
    groups = []
    for gid, indices in members:
        representative, others = rows[indices[0]], [rows[i] for i in indices[1:]]
        text = representative.submission.answer
        marked = [
            Member(r, differences(text, r.submission.answer) if k < DIFF_MEMBERS
                   else [("same", r.submission.answer)])
            for k, r in enumerate(others)
        ]  # fmt: skip
        groups.append(Group(gid, representative, marked))
    return groups


def group_ids(ctx: Pages, rows: list[AnswerRow]) -> dict[int, str]:
    """Each answer's group id, by the store's id (no differences marked); empty when the
    answers cannot be grouped."""
    if not rows:
        return {}
    members = _by_vectors(ctx, rows) if ctx.embedder is not None else _by_signals(rows)
    return {rows[i].submission.id: gid for gid, indices in members or [] for i in indices}


def one_per_group_first(picked: list[AnswerRow], groups: dict[int, str]) -> list[AnswerRow]:
    """``picked`` with the first pick of each group ahead of the rest, each part in its
    order: scoring one answer of every group first tells the scorer most."""
    seen: set[str] = set()
    first: list[AnswerRow] = []
    later: list[AnswerRow] = []
    for row in picked:
        group = groups.get(row.submission.id, f"single-{row.submission.id}")
        (later if group in seen else first).append(row)
        seen.add(group)
    return first + later


def differences(representative: str, text: str) -> list[tuple[str, str]]:
    """``text`` against ``representative``: what it shares, adds and lacks, in its order."""
    a, b = representative[:DIFF_CHARS], text[:DIFF_CHARS]
    segments: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("delete", "replace") and i2 > i1:
            segments.append(("missing", a[i1:i2]))
        if op in ("insert", "replace") and j2 > j1:
            segments.append(("added", b[j1:j2]))
        if op == "equal":
            segments.append(("same", b[j1:j2]))
    if len(text) > DIFF_CHARS:
        segments.append(("same", text[DIFF_CHARS:]))
    return segments


def _by_vectors(ctx: Pages, rows: list[AnswerRow]) -> list[tuple[str, list[int]]]:
    import numpy as np

    from grader.engine.signals.cohort import group_answers

    assert ctx.embedder is not None
    vectors = np.asarray(ctx.embedder.encode([r.submission.answer for r in rows]))
    found = group_answers(vectors, ctx.settings.signals.group_cosine)
    return [
        (g.id, [g.representative, *(m for m in g.members if m != g.representative)]) for g in found
    ]


def _by_signals(rows: list[AnswerRow]) -> list[tuple[str, list[int]]] | None:
    """The groups the grades recorded (each grading batch named its own: merged by name)."""
    named: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        grade = row.submission.grade
        group = grade.signals.group if grade is not None and grade.signals is not None else None
        named[group or f"single-{row.submission.id}"].append(i)
    if all(name.startswith("single-") for name in named):
        return None
    return sorted(named.items(), key=lambda item: (-len(item[1]), item[1][0]))
