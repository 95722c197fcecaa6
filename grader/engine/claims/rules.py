"""Reading one claim in an answer by rules: asserted, negated or absent, with the clause.

A claim is asserted when one of its patterns matches a clause (or two adjacent clauses of one
sentence) with no group negated, in a sentence that does not refute it ("……，这是错误的");
negated when a pattern's groups all occur but one is negated or the sentence refutes it;
absent otherwise. An assertion anywhere wins over a negation elsewhere: an answer that says
a wrong thing once has said it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from grader.engine.claims.lexicon import NEGATION_WINDOW, REFUTATIONS
from grader.engine.claims.patterns import Group, negated_at, parse_group
from grader.engine.claims.text import Clause, key_of

RuleStatus = Literal["asserted", "negated", "absent"]
_REFUTATIONS = tuple(key_of(w) for w in REFUTATIONS)


@dataclass(frozen=True)
class RuleReading:
    status: RuleStatus
    evidence: str = ""  # the clause(s) it was read in


ABSENT = RuleReading("absent")


def read_claim(clauses: Sequence[Clause], patterns: Sequence[Sequence[str]]) -> RuleReading:
    """The claim's reading in the answer's clauses; ``patterns`` as the rubric writes them."""
    negated: RuleReading | None = None
    for written in patterns:
        groups = [parse_group(g) for g in written]
        for span in _spans(clauses, groups):
            polarity = _polarity(span, groups)
            if polarity is None:
                continue
            evidence = "，".join(c.text for c in span)
            if polarity and not _refuted(clauses, span):
                return RuleReading("asserted", evidence)
            negated = negated or RuleReading("negated", evidence)
    return negated or ABSENT


def _spans(clauses: Sequence[Clause], groups: list[Group]) -> list[list[Clause]]:
    """Single clauses where every group occurs; where none has them all, adjacent pairs of one
    sentence that hold the groups in order ("步数越大，显存越大")."""
    singles = [[c] for c in clauses if all(g.hits(c) for g in groups)]
    if singles:
        return singles
    pairs = []
    for a, b in zip(clauses, clauses[1:], strict=False):
        # in order: the pattern's first group in the first clause, its last in the second
        if (
            a.sentence == b.sentence
            and groups[0].hits(a)
            and groups[-1].hits(b)
            and all(g.hits(a) or g.hits(b) for g in groups)
        ):
            pairs.append([a, b])
    return pairs


def _polarity(span: list[Clause], groups: list[Group]) -> bool | None:
    """True: asserted as written; False: a group stands against the pattern (a plain group
    negated wherever it occurs, a ``!`` group nowhere negated); None: a group is missing."""
    hits = [[(c, h) for c in span for h in g.hits(c)] for g in groups]
    if not all(hits):
        return None
    # The pattern's own terms negate nothing ("而不是", "不随"), and a negator before a ``!``
    # group is that group's ("不立即更新": 更新 is not negated).
    own = {id(c): [h for found in hits for d, h in found if d is c] for c in span}
    taken = {
        id(c): [(max(0, s - NEGATION_WINDOW), e) for d, (s, e) in found if d is c]
        for c in span
        for g, found in zip(groups, hits, strict=True)
        if g.negated
    }
    for group, found in zip(groups, hits, strict=True):
        negations = [
            negated_at(c, start, own[id(c)] + ([] if group.negated else taken.get(id(c), [])))
            for c, (start, _) in found
        ]
        holds = any(negations) if group.negated else not all(negations)
        if not holds:
            return False
    return True


def _refuted(clauses: Sequence[Clause], span: list[Clause]) -> bool:
    """Whether the span's sentence, or the next sentence's first clause, refutes it."""
    sentence = span[0].sentence
    keys = [c.key for c in clauses if c.sentence == sentence]
    after = [c.key for c in clauses if c.sentence == sentence + 1][:1]
    return any(r in k for k in (*keys, *after) for r in _REFUTATIONS)
