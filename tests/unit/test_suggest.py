"""`grader suggest`: the answers to grade first cover the answers, skip near-copies, each
lowers most the ridge variance left on the others, and the filled-in file feeds `grader grade
--graded` (end to end on the CLI runner, the 126 seed answers of grad_accum_engineer, the
CountingEmbedder standing in for e5)."""

import csv
import json
import re
import shutil
from collections import Counter

import numpy as np
import pytest

from grader.engine.review.suggest import RIDGE, as_kernel, choose
from grader.files.grades import read_grades
from tests.conftest import RUBRICS
from tests.unit.test_refit_cli import EXAM, counting, invoke, seed_answers


def test_choose_covers_the_answer_groups_largest_first_and_skips_near_copies():
    # three groups in meaning: 0-3 (0 and 1 the same text), 4-5, and 6 alone
    vectors = np.array(
        [[1, 0, 0], [1, 0, 0], [0.95, 0.3, 0], [0.95, 0, 0.3], [0, 1, 0], [0.1, 0.99, 0],
         [0, 0, 1]], dtype=float,
    )  # fmt: skip
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sim = vectors @ vectors.T
    two = choose(sim, 2)
    assert two[0] in {0, 1, 2, 3} and two[1] in {4, 5}  # the largest group first
    group = [0, 0, 0, 0, 1, 1, 2]
    assert {group[i] for i in choose(sim, 3)} == {0, 1, 2}  # every group, the lone one too
    assert not {0, 1} <= set(choose(sim, 4))  # a near-copy of a pick gains nothing
    assert sorted(choose(sim, 9)) == list(range(7))


def _variance_left(sim: np.ndarray, picked: list[int], ridge: float) -> float:
    """The summed predictive variance of a kernel ridge regression fit on ``picked``."""
    across = sim[:, picked]
    inner = sim[np.ix_(picked, picked)] + ridge * np.eye(len(picked))
    return float(np.trace(sim - across @ np.linalg.solve(inner, across.T)))


def test_each_pick_most_lowers_the_ridge_variance_left_on_the_answers():
    # 40 answers in four groups of unequal size and spread, as e5 cosines (all positive)
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(4, 16)) + 4.0
    vectors = np.vstack(
        [c + rng.normal(scale=s, size=(m, 16)) for c, m, s in
         zip(centres, (18, 10, 8, 4), (0.3, 0.8, 1.5, 0.5), strict=True)]
    )  # fmt: skip
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sim = vectors @ vectors.T
    picked: list[int] = []
    for _ in range(8):  # the explicit design: try every answer as the next pick
        rest = [i for i in range(len(sim)) if i not in picked]
        picked.append(min(rest, key=lambda i: _variance_left(sim, [*picked, i], RIDGE)))
    assert choose(sim, 8) == picked


def test_cosines_read_from_a_table_are_made_a_kernel_and_the_vectors_own_need_nothing():
    vectors = np.random.default_rng(3).normal(size=(30, 8)) + 2.0
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sim = vectors @ vectors.T
    assert as_kernel(sim) == pytest.approx(sim, abs=1e-9)  # already one
    assert choose(as_kernel(sim), 5) == choose(sim, 5)
    kept = sim.copy()
    choose(sim, 5)
    assert np.array_equal(sim, kept)  # the caller's matrix is not consumed
    # cosines rounded to one decimal, as a store may keep them, are not a kernel
    rounded = np.round(sim, 1)
    assert np.linalg.eigvalsh(rounded).min() < -1e-6
    assert np.linalg.eigvalsh(as_kernel(rounded)).min() > -1e-9
    assert len(set(choose(as_kernel(rounded), 10))) == 10


def test_suggest_writes_the_calibration_csv_and_grade_uses_it(tmp_path, monkeypatch):
    counting(monkeypatch)
    shutil.copy(RUBRICS / f"{EXAM}.yaml", tmp_path / f"{EXAM}.yaml")
    shutil.copytree(RUBRICS / EXAM, tmp_path / EXAM)
    bank = tmp_path / f"{EXAM}.yaml"
    answers = seed_answers()
    subs = tmp_path / "answers.jsonl"
    subs.write_text(
        "".join(
            json.dumps({k: a[k] for k in ("id", "question_id", "student", "answer")}) + "\n"
            for a in answers
        ),
        encoding="utf-8",
    )
    to_grade = tmp_path / "to_grade.csv"
    result = invoke(
        "suggest", subs, "--bank", bank, "--per-question", 3, "--out", to_grade,
        "--progress", "plain",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    read = re.findall(r"answers read: (\d+)/(\d+) answers", result.output)
    assert len(read) == 6 and read[-1][0] == read[-1][1]  # a line per question, then all
    with to_grade.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0])[:3] == ["submission_id", "question_id", "score"]
    assert all(r["score"] == "" for r in rows)
    per_question = Counter(r["question_id"] for r in rows)
    assert len(per_question) == 6 and set(per_question.values()) == {3}
    by_id = {a["id"]: a for a in answers}
    for qid in per_question:  # never two copies of one text for one question
        texts = [
            by_id[r["submission_id"]]["answer"].strip() for r in rows if r["question_id"] == qid
        ]
        assert len(set(texts)) == len(texts)
    # the instructor fills the scores in; grading then leans on them
    for r in rows:
        r["score"] = by_id[r["submission_id"]]["human_total"]
    with to_grade.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path / "grades.jsonl"
    graded = invoke(
        "grade", subs, "--bank", bank, "--out", out, "--judge", "scripted", "--graded", to_grade
    )
    assert graded.exit_code == 0, graded.output
    assert "18 answer(s) you scored" in graded.output
    chosen = {r["submission_id"] for r in rows}
    leaned = {
        n.id
        for g in read_grades(out)
        if g.details.has("scorer")
        for n in g.details.scorer.neighbours
    }
    assert leaned and leaned <= chosen | {n for n in leaned if n.startswith("anchor:")}
    assert leaned & chosen
