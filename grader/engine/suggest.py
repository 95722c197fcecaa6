"""The answers to grade first: per question, the few whose instructor scores help the rest most.

The scorer leans on a question's graded answers as neighbours, so a graded sample helps the
answers near it. A good sample therefore covers the question's answers — their groups in
meaning and their range of likely scores — and not near-copies of each other. ``choose`` is a
greedy k-medoids (facility location): each pick is the answer that most reduces the distance
from every answer to its nearest pick, each answer weighted by how unsure the scorer is of it,
so uncertain regions get covered first. The distance is the e5 cosine distance plus a weight
times the gap between the scorer's predicted shares (``SHARE_WEIGHT``, chosen on ADS and
Mohler development data: ``benchmarks/review_queue.py``). A near-copy of a pick gains nothing.

``predictions`` gives, without the judge, what the choice reads: each answer's predicted share
and confidence from the signals scorer (``grader suggest`` loads no judge).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from grader.config import Settings
from grader.engine.features import answer_features
from grader.engine.rubrics import rubric_for
from grader.engine.scorer import ScorerSet
from grader.engine.scoring import scorer_confidence
from grader.engine.signals import analyze_question, blank_reason
from grader.models import Bank, Rubric, Submission

if TYPE_CHECKING:
    from grader.embed import Embedder

SHARE_WEIGHT = 0.25  # one point of predicted share counts as this much cosine distance
UNSURE_WEIGHT = 1.0  # an answer's weight: 1 + this × (1 − confidence)


def choose(
    similarity: np.ndarray,
    shares: np.ndarray,
    confidence: np.ndarray,
    k: int,
    share_weight: float = SHARE_WEIGHT,
    unsure_weight: float = UNSURE_WEIGHT,
) -> list[int]:
    """Indices of ``k`` answers (in the order picked) covering the others: ``similarity``
    their cosines, ``shares`` the predicted shares, ``confidence`` the scorer's confidence."""
    n = len(shares)
    if k >= n:
        return list(range(n))
    shares = np.asarray(shares, dtype=float)
    distance = (1 - np.asarray(similarity, dtype=float)) + share_weight * np.abs(
        shares[:, None] - shares[None, :]
    )
    distance = np.maximum(distance, 0.0)
    weight = 1 + unsure_weight * (1 - np.asarray(confidence, dtype=float))
    nearest = np.full(n, distance.max() + 1.0)  # before any pick: farther than anything
    picked: list[int] = []
    for _ in range(k):
        gain = (weight[:, None] * np.maximum(nearest[:, None] - distance, 0.0)).sum(axis=0)
        gain[picked] = -1.0
        best = int(np.argmax(gain))
        picked.append(best)
        nearest = np.minimum(nearest, distance[:, best])
    return picked


@dataclass(frozen=True)
class Prediction:
    """What the choice reads about one answer: its predicted share and the confidence."""

    share: float
    confidence: float


def predictions(
    bank: Bank,
    rubrics: dict[str, Rubric],
    answers: Sequence[Submission],
    embedder: Embedder,
    scorer: ScorerSet,
    settings: Settings,
) -> tuple[dict[str, Prediction], dict[str, np.ndarray]]:
    """(per answer id: the signals scorer's share and confidence, without the judge; per
    answer id: its e5 vector) for one question's non-blank answers."""
    if not answers:
        return {}, {}
    question = bank.get(answers[0].question_id)
    assert question is not None
    rubric = rubric_for(question, rubrics)
    analysis = analyze_question(question, rubric, answers, embedder, settings)
    found = {}
    for s in answers:
        features = answer_features(question, rubric, s.answer, analysis.signals[s.id])
        _, share = scorer.score(features)
        sure = scorer_confidence(share, features, scorer)
        found[s.id] = Prediction(share, 0.5 if sure is None else sure)
    return found, {s.id: analysis.vectors[s.id] for s in answers}


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
        found, vectors = predictions(bank, rubrics, answers, embedder, scorer, settings)
        matrix = np.stack([vectors[s.id] for s in answers])
        picked = choose(
            matrix @ matrix.T,
            np.array([found[s.id].share for s in answers]),
            np.array([found[s.id].confidence for s in answers]),
            per_question,
        )
        out += [answers[i] for i in picked]
    return out
