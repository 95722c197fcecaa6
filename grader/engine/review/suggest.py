"""The answers to grade first: per question, the few whose instructor scores help the rest most.

The scorer leans on a question's graded answers: the residual (human − first-stage share) of
the nearest ones in e5 meaning, their mean, and a ridge over their wording, so a graded
answer teaches the scorer about the answers like it. ``choose`` is a greedy transductive
experimental design (Yu, Bi and Tresp, 2006) over the answers' e5 cosines: each pick is the
answer whose score most lowers a ridge regression's summed predictive variance over every
answer, so the picks span the question's answer groups and their directions of variation,
large groups first, never two near-copies. On ADS and Mohler development data it beat random
samples and the greedy k-medoids it replaced (``suggest_designs``, docs/research/explorations.md,
and the log's "Answers to grade first"); it needs no judge and no scorer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from grader.config import RuleSettings
from grader.engine.reading.blanks import blank_reason
from grader.models import Bank, Submission

if TYPE_CHECKING:
    from grader.embed import Embedder


RIDGE = 0.01  # the design's ridge on e5 cosines, chosen on development (0.001–0.03 alike)


def choose(kernel: np.ndarray, k: int, ridge: float = RIDGE) -> list[int]:
    """Indices of ``k`` answers (in the order picked): greedy experimental design over
    ``kernel``, a positive semi-definite matrix such as the answers' unit vectors' cosines
    (``as_kernel`` makes one of cosines read from a table). Each pick lowers most the summed
    variance left after a ridge regression (penalty ``ridge``) on the picks so far; ``left``
    is the kernel of what the picks cannot yet explain, so a near-copy of a pick has almost
    nothing left to teach. k passes over an n×n matrix: no decomposition, so a question of
    thousands of answers is chosen in a fraction of a second (``suggest_cost``,
    docs/research/explorations.md)."""
    n = len(kernel)
    if k >= n:
        return list(range(n))
    left = np.array(kernel, dtype=float)  # a copy: the caller's matrix stays as it was
    picked: list[int] = []
    for _ in range(k):
        gain = (left**2).sum(axis=0) / (np.maximum(np.diag(left), 0.0) + ridge)
        gain[picked] = -np.inf
        picked.append(int(np.argmax(gain)))
        column = left[:, picked[-1]].copy()
        left -= np.outer(column, column) / (max(column[picked[-1]], 0.0) + ridge)
    return picked


def as_kernel(similarity: np.ndarray) -> np.ndarray:
    """The nearest positive semi-definite matrix to ``similarity``: cosines read from rounded
    or stored values need not form a kernel, and on one that is not a pick could leave a
    negative variance and ``choose``'s update diverge. Negative eigenvalues are dropped (one
    n³ eigendecomposition); the cosines of the vectors themselves need none of this."""
    sym = np.asarray(similarity, dtype=float)
    values, vectors = np.linalg.eigh((sym + sym.T) / 2)
    kernel: np.ndarray = (vectors * np.maximum(values, 0.0)) @ vectors.T
    return kernel


def candidates(
    bank: Bank, submissions: Sequence[Submission], rules: RuleSettings
) -> dict[str, list[Submission]]:
    """The answers that may be suggested, by subjective question: blank answers are scored
    by rule, never suggested."""
    by_question: dict[str, list[Submission]] = {}
    for s in submissions:
        question = bank.get(s.question_id)
        if question is None or question.type.objective:
            continue
        if blank_reason(s.answer, rules.min_answer_chars) is None:
            by_question.setdefault(s.question_id, []).append(s)
    return by_question


def suggest(
    bank: Bank,
    submissions: Sequence[Submission],
    embedder: Embedder,
    rules: RuleSettings,
    per_question: int,
) -> list[Submission]:
    """Per subjective question, the ``per_question`` answers to grade first among its
    ``candidates``, questions in bank order."""
    return first_of(bank, candidates(bank, submissions, rules), embedder, per_question)


def first_of(
    bank: Bank,
    by_question: dict[str, list[Submission]],
    embedder: Embedder,
    per_question: int,
    progress: Callable[[int], None] | None = None,
) -> list[Submission]:
    """``choose`` over each question's answers (``candidates``), questions in bank order;
    ``progress`` is told each question's count of answers once they are read (embedding is
    where the time goes)."""
    out: list[Submission] = []
    for question in bank.questions:
        answers = by_question.get(question.id, [])
        if not answers:
            continue
        vectors = embedder.encode([s.answer for s in answers])
        picked = choose(vectors @ vectors.T, per_question)
        out += [answers[i] for i in picked]
        if progress is not None:
            progress(len(answers))
    return out
