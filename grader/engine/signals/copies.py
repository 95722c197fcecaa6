"""Copies that are copies: near-duplicates confirmed by shared wording.

E5 cosines of answers to one question are compressed (two differently worded answers to "can
the bottom of a stack be deleted" sat at 0.973), so a near-duplicate (``is_copy``) must also
share its wording: most of the shorter answer's character 3-grams, not counting those of the
question, must occur in the other. Measured on ADS development pairs by
``benchmarks/scorer_review.py``.
"""

from __future__ import annotations

from grader.text import content_chars, match_key

# Chosen on ADS development pairs (docs/research/benchmarks-log.md, "Review flags").
COPY_MIN_COSINE = 0.97
COPY_MIN_CONTAINMENT = 0.5
# shorter answers are too generic to call copies (SignalSettings.duplicate_min_chars)
COPY_MIN_CHARS = 20


def char_ngrams(text: str, n: int = 3) -> set[str]:
    """Character n-grams of the match key's letters, digits and CJK (punctuation dropped)."""
    key = "".join(ch for ch in match_key(text) if ch.isalnum())
    if len(key) < n:
        return {key} if key else set()
    return {key[i : i + n] for i in range(len(key) - n + 1)}


def containment(a: str, b: str, question: str = "") -> float:
    """Share of the shorter answer's 3-grams found in the other, leaving out the question's
    own 3-grams (two answers that restate the question share them without copying)."""
    asked = char_ngrams(question) if question else set()
    first, second = char_ngrams(a) - asked, char_ngrams(b) - asked
    smaller = min(len(first), len(second))
    return len(first & second) / smaller if smaller else 0.0


def jaccard(a: str, b: str) -> float:
    """3-gram Jaccard: shared over all; low when one answer extends the other."""
    first, second = char_ngrams(a), char_ngrams(b)
    union = first | second
    return len(first & second) / len(union) if union else 1.0


def is_copy(
    cosine: float,
    a: str,
    b: str,
    question: str = "",
    *,
    min_cosine: float = COPY_MIN_COSINE,
    min_containment: float = COPY_MIN_CONTAINMENT,
    min_chars: int = COPY_MIN_CHARS,
) -> bool:
    """Near-duplicate: close in meaning, long enough, and most of the shorter answer's wording
    (beyond the question's) is in the other."""
    if cosine < min_cosine or min(content_chars(a), content_chars(b)) < min_chars:
        return False
    return containment(a, b, question) >= min_containment
