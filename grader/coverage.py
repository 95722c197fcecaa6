"""Key-point coverage without a model: how much of each key point's wording the answer has.

Character bigrams for Chinese and words for Latin text, on match keys (Simplified, NFKC,
case-folded). It cannot be talked into anything and fails on different answers than the LLM
judge does (reworded or English answers), which is why the pipeline uses the two together:
a large gap between them sends the grade to review.
"""

from __future__ import annotations

import re
import unicodedata

from grader.models import Criterion, Rubric
from grader.text import match_key

_WORD = re.compile(r"[a-z0-9_]+")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")


def features(text: str) -> set[str]:
    key = match_key(text)
    # Words come from the text with its spaces kept: the match key drops spaces, which glued
    # every English sentence into one "word" and left English coverage at 0.
    spaced = unicodedata.normalize("NFKC", text).casefold()
    grams = {w for w in _WORD.findall(spaced) if len(w) > 1}
    for run in _CJK_RUN.findall(key):
        grams.update(run[i : i + 2] for i in range(len(run) - 1))
        if len(run) == 1:
            grams.add(run)
    return grams


def point_coverage(key_point: str, answer_features: set[str]) -> float:
    wanted = features(key_point)
    return len(wanted & answer_features) / len(wanted) if wanted else 0.0


def criterion_coverage(criterion: Criterion, answer: str) -> float:
    """Mean coverage of the criterion's key points (its description when it lists none)."""
    have = features(answer)
    points = criterion.key_points or [criterion.description]
    return sum(point_coverage(p, have) for p in points) / len(points)


def rubric_coverage(rubric: Rubric, answer: str) -> dict[str, float]:
    return {c.id: criterion_coverage(c, answer) for c in rubric.criteria}


def coverage_points(rubric: Rubric, answer: str) -> float:
    """Points the answer would get if each criterion paid out in proportion to its coverage."""
    covered = rubric_coverage(rubric, answer)
    return sum(c.points * covered[c.id] for c in rubric.criteria)
