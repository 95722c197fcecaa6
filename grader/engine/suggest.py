"""The answers to grade first: per question, the few whose instructor scores help the rest most.

The scorer leans on a question's graded answers as neighbours, and on what they say about
its own bias on the question. ``choose`` sorts the answers by the scorer's predicted share, cuts
them into K strata of equal size and takes each stratum's most typical answer (highest mean e5
cosine to the others of its stratum), passing over near-copies of earlier picks: the sample
follows the question's score distribution as a random one does, without a random sample's gaps
and clumps. Measured on ADS and Mohler development data against random samples and against
cluster representatives (k-medoids): ``benchmarks/review_queue.py``.

``predictions`` gives, without the judge, what the choice reads: each answer's predicted share
from the signals scorer (``grader suggest`` loads no judge).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from grader.config import Settings
from grader.engine.features import answer_features
from grader.engine.rubrics import rubric_for
from grader.engine.scorer import ScorerSet
from grader.engine.signals import analyze_question, blank_reason
from grader.models import Bank, Rubric, Submission

if TYPE_CHECKING:
    from grader.embed import Embedder

COPY_COSINE = 0.97  # a pick this close to an earlier one is a near-copy: the next one instead


def choose(similarity: np.ndarray, shares: np.ndarray, k: int) -> list[int]:
    """Indices of ``k`` answers covering the others: the answers sorted by predicted share
    (``shares``) fall into ``k`` strata of equal size, and each stratum gives its most
    typical answer (highest mean cosine to the stratum's others, ``similarity``) that is not
    a near-copy of an earlier pick. Stratified, the sample follows the question's score
    distribution as a random one does, without a random one's gaps and clumps."""
    n = len(shares)
    if k >= n:
        return list(range(n))
    similarity = np.asarray(similarity, dtype=float)
    order = np.argsort(np.asarray(shares, dtype=float), kind="stable")
    picked: list[int] = []
    for stratum in np.array_split(order, k):
        typical = similarity[np.ix_(stratum, stratum)].mean(axis=1)
        ranked = [int(stratum[i]) for i in np.argsort(-typical, kind="stable")]
        fresh = [i for i in ranked if not picked or similarity[i, picked].max() < COPY_COSINE]
        picked.append((fresh or ranked)[0])
    return picked


def predictions(
    bank: Bank,
    rubrics: dict[str, Rubric],
    answers: Sequence[Submission],
    embedder: Embedder,
    scorer: ScorerSet,
    settings: Settings,
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """(per answer id: the scorer's share without the judge or graded answers; per answer
    id: its e5 vector) for one question's non-blank answers."""
    if not answers:
        return {}, {}
    question = bank.get(answers[0].question_id)
    assert question is not None
    rubric = rubric_for(question, rubrics)
    analysis = analyze_question(question, rubric, answers, embedder, settings)
    shares = {
        s.id: scorer.score(answer_features(question, rubric, s.answer, analysis.signals[s.id]))[1]
        for s in answers
    }
    return shares, {s.id: analysis.vectors[s.id] for s in answers}


def suggest(
    bank: Bank,
    rubrics: dict[str, Rubric],
    submissions: Sequence[Submission],
    embedder: Embedder,
    scorer: ScorerSet,
    settings: Settings,
    per_question: int,
) -> list[Submission]:
    """Per subjective question, the ``per_question`` answers to grade first (blank answers
    are scored by rule, never suggested), questions in bank order."""
    by_question: dict[str, list[Submission]] = {}
    for s in submissions:
        question = bank.get(s.question_id)
        if question is None or question.type.objective:
            continue
        if blank_reason(s.answer, settings.min_answer_chars) is None:
            by_question.setdefault(s.question_id, []).append(s)
    out: list[Submission] = []
    for question in bank.questions:
        answers = by_question.get(question.id, [])
        if not answers:
            continue
        shares, vectors = predictions(bank, rubrics, answers, embedder, scorer, settings)
        matrix = np.stack([vectors[s.id] for s in answers])
        picked = choose(matrix @ matrix.T, np.array([shares[s.id] for s in answers]), per_question)
        out += [answers[i] for i in picked]
    return out
