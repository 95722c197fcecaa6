"""An exam in the service's store whose grades the scorer decided, scored by an instructor: what
a refit on the instructor pages learns from and re-scores. The grades are written straight to
the store (no judge, no model), with synthetic features as in tests/unit/test_refit.py: the
instructor's share follows the n-gram coverage, which the shipped scorer does not weigh most,
so a refit has something to learn."""

from __future__ import annotations

import numpy as np

from grader.bank.files import load_bank
from grader.engine.reading.rubrics import load_rubrics, rubric_for
from grader.engine.scoring.scorer_model import AnswerFeatures, load_scorer
from grader.models import CriterionScore, Grade, GradeStatus, Method
from grader.service.store import Store
from grader.service.store.records import NewSubmission
from tests.conftest import RUBRICS

EXAM = "grad_accum_engineer"
QUESTIONS = ("004-s5-q1", "004-s5-q2", "004-s5-q3")  # short answers, 5 points each
CHOICE = "004-s2-q1"
BASE = load_scorer("default")


def scorer_grade(external_id: str, question_id: str, features: dict, rubric) -> Grade:
    """A grade as the pipeline stores it when the shipped scorer decided it."""
    share = BASE.score(AnswerFeatures(**features))[1]
    points = {c.id: round(c.points * share, 2) for c in rubric.criteria}
    return Grade(
        submission_id=external_id,
        question_id=question_id,
        status=GradeStatus.GRADED,
        score=round(share * rubric.points * 2) / 2,
        max_score=rubric.points,
        method=Method.JUDGE,
        criteria=[
            CriterionScore(id=c.id, points=points[c.id], max_points=c.points)
            for c in rubric.criteria
        ],
        details={
            "judge_points": points,
            "scorer": {
                "version": BASE.version,
                "decided_by": "signals",
                "share": sum(points.values()) / rubric.points,
                "features": features,
                "contributions": {},
                "copies": [],
                "neighbours": [],
            },
        },
        provenance={"rubric_version": rubric.version, "scorer_version": BASE.version},
    )


def scored_exam(
    store: Store,
    platform_id: int,
    instructor_id: int | None,
    *,
    per_question: int = 20,
    unscored: int = 2,
    seed: int = 0,
    prefix: str = "r",
) -> dict[str, int]:
    """Answers to three short-answer questions, graded by the shipped scorer; the first
    ``per_question`` of each scored by the instructor (none when ``instructor_id`` is None),
    ``unscored`` more left for the refit to re-score; and one choice answer (no scorer).
    Returns the store's ids by external id."""
    rng = np.random.default_rng(seed)
    bank_path = RUBRICS / f"{EXAM}.yaml"
    bank = load_bank(bank_path)
    rubrics = load_rubrics(bank_path, bank)
    ids = {}
    for q, question_id in enumerate(QUESTIONS):
        rubric = rubric_for(bank.get(question_id), rubrics)
        for a in range(per_question + unscored):
            ngram = float(rng.uniform())
            features = {
                "reference_margin": float(rng.normal(0.1, 0.05)),
                "semantic_coverage": float(rng.uniform()),
                "ngram_coverage": ngram,
                "length_log_ratio": float(rng.normal(0, 0.5)),
                "language": "zh",
            }
            external = f"{prefix}{q}-{a}"
            answer = f"答案 {prefix} {question_id} 第{a}个: " + "梯度累积" * (1 + a % 4)
            stored = _submit(store, platform_id, external, question_id, answer)
            store.queue.record([(stored, scorer_grade(external, question_id, features, rubric))])
            ids[external] = stored.id
            if instructor_id is not None and a < per_question:
                share = float(np.clip(0.1 + 0.8 * ngram + rng.normal(0, 0.05), 0, 1))
                human = round(share * rubric.points * 2) / 2
                store.reviews.set_human_score(stored.id, instructor_id, human, None)
    choice = f"{prefix}-choice"
    stored = _submit(store, platform_id, choice, CHOICE, "B")
    objective = Grade(
        submission_id=choice, question_id=CHOICE, status=GradeStatus.GRADED, score=0.0,
        max_score=2.0, method=Method.EXACT, provenance={"rubric_version": ""},
    )  # fmt: skip
    store.queue.record([(stored, objective)])
    ids[choice] = stored.id
    return ids


def _submit(store: Store, platform_id: int, external: str, question_id: str, answer: str):
    [(stored, _)] = store.intake.submit(
        platform_id, [NewSubmission(external, EXAM, question_id, answer, f"student {external}")]
    )
    return stored
