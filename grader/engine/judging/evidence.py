"""Check the judge's quotes against the answer: evidence is checked, not trusted.

Small judges invent quotes — often the rubric's own key points, pasted as if the student had
written them. A quote counts only if it occurs in the answer (after normalizing width, case,
spaces and script, allowing '…' elisions), or if one sentence of the answer carries most of
its wording, in which case that sentence becomes the evidence. Otherwise the criterion
scores 0.
"""

from __future__ import annotations

import re

from grader.models import AnswerSignals, Criterion, Rubric, Verdict
from grader.text import features, match_key, point_coverage, sentences_of

FUZZY_MIN_OVERLAP = 0.6
_MIN_FEATURES = 3
_CLAUSE = re.compile(r"[^。！？!?\n；;，,]+")


def locate(evidence: str, answer: str) -> str | None:
    """The evidence as it stands in the answer, or None when the answer does not contain it."""
    haystack = match_key(answer)
    pieces = [match_key(p) for p in evidence.replace("...", "…").split("…")]
    pieces = [p for p in pieces if p]
    if pieces and all(p in haystack for p in pieces):
        return evidence
    wanted = features(evidence)
    if len(wanted) < _MIN_FEATURES:
        return None
    best, best_overlap = None, 0.0
    for sentence in _CLAUSE.findall(answer):
        overlap = len(wanted & features(sentence)) / len(wanted)
        if overlap > best_overlap:
            best, best_overlap = sentence.strip(), overlap
    return best if best_overlap >= FUZZY_MIN_OVERLAP else None


MAX_CRITERIA_PER_QUOTE = 2


def check_verdict(
    verdict: Verdict, rubric: Rubric, answer: str
) -> dict[str, tuple[float, str, str]]:
    """Criterion id -> (points, quote, problem) once the judge's quotes have been checked.

    ``problem`` is "" when the points stand, "not_in_answer" when the quote is invented, and
    "reused" when one quote was made to carry more than MAX_CRITERIA_PER_QUOTE criteria — a
    small judge's way of giving an off-topic answer every point; the criteria whose wording
    the quote shares most keep their points.
    """
    checked: dict[str, tuple[float, str, str]] = {}
    by_quote: dict[str, list[str]] = {}
    for c in rubric.criteria:
        v = verdict.criteria[c.id]
        quote = locate(v.evidence, answer) if v.evidence else None
        if v.points > 0 and quote is None:
            checked[c.id] = (0.0, "", "not_in_answer")
            continue
        checked[c.id] = (v.points, quote or "", "")
        if quote and v.points > 0:
            by_quote.setdefault(match_key(quote), []).append(c.id)
    wording = {
        c.id: features(
            " ".join([c.description, *c.key_points, *(lv.descriptor for lv in c.levels)])
        )
        for c in rubric.criteria
    }
    for key, ids in by_quote.items():
        if len(ids) <= MAX_CRITERIA_PER_QUOTE:
            continue
        shared = {cid: len(features(key) & wording[cid]) for cid in ids}
        keep = sorted(ids, key=shared.__getitem__, reverse=True)[:MAX_CRITERIA_PER_QUOTE]
        for cid in ids:
            if cid not in keep:
                checked[cid] = (0.0, checked[cid][1], "reused")
    return checked


EVIDENCE_CHARS = 80


def closest_evidence(criterion: Criterion, answer: str, signals: AnswerSignals | None) -> str:
    """The answer's span closest to the criterion, taken from the answer, never written.

    With embeddings, the sentence that came closest in meaning to one of the criterion's key
    points (or its description); without them, the sentence sharing most of its wording.
    Either is a piece of the answer itself, so it can never be an invented quote.
    """
    if signals is not None:
        matches = [m for m in signals.key_points if m.criterion == criterion.id and m.sentence]
        if matches:
            return max(matches, key=lambda m: m.similarity).sentence[:EVIDENCE_CHARS]
    wanted = " ".join(criterion.key_points) or criterion.description
    sentences = sentences_of(answer) or [answer.strip()]
    best = max(sentences, key=lambda s: point_coverage(wanted, features(s)))
    return best[:EVIDENCE_CHARS]
