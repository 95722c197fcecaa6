"""The answers to grade first: per question, the few whose instructor scores help the rest most.

The scorer leans on a question's graded answers as neighbours, so a graded answer helps the
answers near it in meaning. ``choose`` is a greedy k-medoids over the answers' e5 cosine
distance: each pick is the answer that most reduces the distance from every answer to its
nearest pick, so the picks are the centres of the question's answer groups, large groups
first, and never two near-copies. On ADS and Mohler development data it was compared with
random samples and with strata of the scorer's predicted share (``benchmarks/review_queue.py``,
docs/research/benchmarks-log.md "Answers to grade first"); it needs no judge and no scorer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from grader.config import RuleSettings
from grader.engine.blanks import blank_reason
from grader.models import Bank, Submission

if TYPE_CHECKING:
    from grader.embed import Embedder


def choose(similarity: np.ndarray, k: int) -> list[int]:
    """Indices of ``k`` answers (in the order picked) covering the others: greedy k-medoids
    over cosine distance (``similarity``: the answers' cosines). Each pick is the answer that
    most reduces the distance from every answer to its nearest pick; a near-copy of a pick
    reduces almost nothing, so copies are not picked twice."""
    n = len(similarity)
    if k >= n:
        return list(range(n))
    distance = np.maximum(1 - np.asarray(similarity, dtype=float), 0.0)
    nearest = np.full(n, distance.max() + 1.0)  # before any pick: farther than anything
    picked: list[int] = []
    for _ in range(k):
        gain = np.maximum(nearest[:, None] - distance, 0.0).sum(axis=0)
        gain[picked] = -1.0
        picked.append(int(np.argmax(gain)))
        nearest = np.minimum(nearest, distance[:, picked[-1]])
    return picked


def suggest(
    bank: Bank,
    submissions: Sequence[Submission],
    embedder: Embedder,
    rules: RuleSettings,
    per_question: int,
) -> list[Submission]:
    """Per subjective question, the ``per_question`` answers to grade first (blank answers
    are scored by rule, never suggested), questions in bank order."""
    by_question: dict[str, list[Submission]] = {}
    for s in submissions:
        question = bank.get(s.question_id)
        if question is None or question.type.objective:
            continue
        if blank_reason(s.answer, rules.min_answer_chars) is None:
            by_question.setdefault(s.question_id, []).append(s)
    out: list[Submission] = []
    for question in bank.questions:
        answers = by_question.get(question.id, [])
        if not answers:
            continue
        vectors = embedder.encode([s.answer for s in answers])
        picked = choose(vectors @ vectors.T, per_question)
        out += [answers[i] for i in picked]
    return out
