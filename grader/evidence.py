"""Check the judge's quotes against the answer: evidence is checked, not trusted.

Small judges invent quotes — often the rubric's own key points, pasted as if the student had
written them. A quote counts only if it occurs in the answer (after normalizing width, case,
spaces and script, allowing '…' elisions), or if one sentence of the answer carries most of
its wording, in which case that sentence becomes the evidence. Otherwise the criterion
scores 0.
"""

from __future__ import annotations

import re

from grader.coverage import features
from grader.text import match_key

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
