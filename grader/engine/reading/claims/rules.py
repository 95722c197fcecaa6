"""Reading one claim in an answer by rules: asserted, negated or absent, with the clause.

A claim is asserted when one of its patterns matches a clause (or two adjacent clauses of one
sentence) with no group negated, in a sentence that does not refute it ("……，这是错误的");
negated when a pattern's groups all occur but one is negated or the sentence refutes it;
absent otherwise. An assertion anywhere wins over a negation elsewhere: an answer that says
a wrong thing once has said it.

A negation is *denied* when the answer says no in so many words: a negator on one of the
claim's own terms ("loss 不需要除以累积步数"), or a sentence that refutes the claim. A claim
written as a negation ("累积期间!更新参数") is only opposed by an answer that names the term
plainly ("才做一次参数更新"), which most right answers also do: opposed is weaker evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from grader.engine.reading.claims.lexicon import NEGATION_WINDOW, REFUTATIONS
from grader.engine.reading.claims.listing import FENCE
from grader.engine.reading.claims.patterns import (
    Group,
    denied_at,
    has_negator,
    negated_at,
    opposite,
    parse_group,
)
from grader.engine.reading.claims.text import Clause, clauses_of, key_of

RuleStatus = Literal["asserted", "negated", "absent"]
Polarity = Literal["holds", "denied", "opposed"]
ANYWHERE = "*"  # a pattern led by it holds when its groups occur anywhere in the answer
_REFUTATIONS = tuple(key_of(w) for w in REFUTATIONS)


@dataclass(frozen=True)
class RuleReading:
    status: RuleStatus
    evidence: str = ""  # the clause(s) it was read in
    denied: bool = False  # negated in so many words (see the module's docstring)


ABSENT = RuleReading("absent")


@dataclass(frozen=True)
class ReadAnswer:
    """An answer cut into clauses once, with the sentences that refute what they say: every
    claim of a rubric is read against it."""

    clauses: tuple[Clause, ...]
    refuted: frozenset[int]  # sentence numbers
    lines: tuple[Clause, ...]  # the clauses with each code block cut into its lines

    @staticmethod
    def of(answer: str, stem: str = "") -> ReadAnswer:
        """``stem``: the question's, whose clauses an answer repeats to say nothing; a clause
        that is mostly the stem's wording is left out."""
        clauses = tuple(c for c in clauses_of(answer) if not _echoes(c, stem))
        lines = (
            tuple(c for c in clauses_of(answer, code_lines=True) if not _echoes(c, stem))
            if FENCE in answer
            else clauses
        )
        refuting = {c.sentence for c in clauses if any(r in c.key for r in _REFUTATIONS)}
        first: dict[
            int, Clause
        ] = {}  # a sentence's first clause: "……。这是错误的。" refutes the one before
        for c in clauses:
            first.setdefault(c.sentence, c)
        refuted = set(refuting)
        refuted |= {c.sentence - 1 for s, c in first.items() if s in refuting and _refutes(c)}
        return ReadAnswer(clauses, frozenset(refuted), lines)


def read_claim(
    answer: ReadAnswer,
    patterns: Sequence[Sequence[str]],
    strict: bool = False,
    opposites: bool = False,
) -> RuleReading:
    """The claim's reading in the answer; ``patterns`` as the rubric writes them. ``strict``
    (a wrong claim, which costs points): a two-group pattern must hold in one clause, and
    in code on one line.
    ``opposites`` (a decisive part): a direction claim not asserted is denied where a clause
    with no negator asserts the opposite direction (``patterns.opposite``)."""
    negated: RuleReading | None = None
    clauses = answer.lines if strict else answer.clauses
    for written in patterns:
        whole = bool(written) and written[0] == ANYWHERE
        groups = [parse_group(g) for g in (written[1:] if whole else written)]
        spans = [list(answer.clauses)] if whole else _spans(clauses, groups, 3 if strict else 2)
        for span in spans:
            polarity = _polarity(span, [g for g in groups if not g.excluded])
            if polarity is None:
                continue
            evidence = "，".join(c.text for c in _holding(span, groups))
            refuted = span[0].sentence in answer.refuted
            if polarity == "holds" and not refuted:
                return RuleReading("asserted", evidence)
            denied = refuted or polarity == "denied"
            if negated is None or (denied and not negated.denied):
                negated = RuleReading("negated", evidence, denied)
    if opposites and not (negated and negated.denied):
        negated = _opposed_direction(answer, patterns) or negated
    return negated or ABSENT


def _opposed_direction(answer: ReadAnswer, patterns: Sequence[Sequence[str]]) -> RuleReading | None:
    """A denial by the opposite direction ("计算量只有原来的1/N" against "计算量不变"): the
    opposite pattern holding in one clause that has no negator and is not refuted."""
    for written in patterns:
        turned = opposite(list(written))
        if turned is None:
            continue
        groups = [parse_group(g) for g in turned]
        for [clause] in _spans(answer.clauses, groups, len(groups) + 1):
            if has_negator(clause) or clause.sentence in answer.refuted:
                continue
            if _polarity([clause], groups) == "holds":
                return RuleReading("negated", clause.text, denied=True)
    return None


ECHO_SHARE = 0.6  # of a clause's character 3-grams found in the stem: the stem said again


def _echoes(clause: Clause, stem: str) -> bool:
    if not stem:
        return False
    grams = {clause.key[i : i + 3] for i in range(len(clause.key) - 2)}
    if len(grams) < 4:
        return False
    asked = key_of(stem)
    return sum(g in asked for g in grams) >= ECHO_SHARE * len(grams)


def _holding(span: list[Clause], groups: list[Group]) -> list[Clause]:
    """The span's clauses where a group occurs: the evidence of an answer-wide pattern is
    those, not the whole answer."""
    if len(span) <= 2:
        return span
    return [c for c in span if any(g.hits(c) for g in groups)][:4]


def _refutes(clause: Clause) -> bool:
    return any(r in clause.key for r in _REFUTATIONS)


def _spans(clauses: Sequence[Clause], written: list[Group], pair_from: int) -> list[list[Clause]]:
    """Single clauses where every group occurs and no excluded one does; where none, for a
    pattern of ``pair_from`` groups or more, adjacent pairs of one sentence that hold the
    groups in order ("步数越大，显存越大")."""
    groups = [g for g in written if not g.excluded]
    excluded = [g for g in written if g.excluded]

    def clean(span: list[Clause]) -> bool:
        return not any(g.hits(c) for g in excluded for c in span)

    singles = [[c] for c in clauses if all(g.hits(c) for g in groups) and clean([c])]
    if singles or len(groups) < pair_from:
        return singles
    pairs = []
    for a, b in pairwise(clauses):
        # in order: the pattern's first group in the first clause, its last in the second
        if (
            a.sentence == b.sentence
            and groups[0].hits(a)
            and groups[-1].hits(b)
            and all(g.hits(a) or g.hits(b) for g in groups)
            and clean([a, b])
        ):
            pairs.append([a, b])
    return pairs


def _polarity(span: list[Clause], groups: list[Group]) -> Polarity | None:
    """``holds``: asserted as written; ``denied``: a plain group negated in so many words
    wherever it occurs (``denied_at``), in a pattern with no ``!`` group; ``opposed``: any
    other group standing against it (a ``!`` group nowhere negated, a plain one negated from
    further back); None: a group is missing."""
    hits = [[(i, h) for i, c in enumerate(span) for h in g.hits(c)] for g in groups]
    if not all(hits):
        return None
    # The pattern's own terms negate nothing ("而不是", "不随"), and a negator before a ``!``
    # group is that group's ("不立即更新": 更新 is not negated).
    own = [bytearray(len(c.key)) for c in span]
    taken = [bytearray(len(c.key)) for c in span]
    for group, found in zip(groups, hits, strict=True):
        for i, (start, end) in found:
            own[i][start:end] = b"\x01" * (end - start)
            if group.negated:
                first = max(0, start - NEGATION_WINDOW)
                taken[i][first:end] = b"\x01" * (end - first)
    both = [
        bytes(a | b for a, b in zip(o, t, strict=True)) for o, t in zip(own, taken, strict=True)
    ]
    for group, found in zip(groups, hits, strict=True):
        masks = own if group.negated else both
        negations = [negated_at(span[i], start, masks[i]) for i, (start, _) in found]
        holds = any(negations) if group.negated else not all(negations)
        if holds:
            continue
        # in a claim written as a negation, the negator of its plain term may be the ``!``
        # term's own ("中间不做 optimizer.step()"): only an opposite is read there
        if group.negated or any(g.negated for g in groups):
            return "opposed"
        denials = [denied_at(span[i], start, masks[i]) for i, (start, _) in found]
        return "denied" if all(denials) else "opposed"
    return "holds"
