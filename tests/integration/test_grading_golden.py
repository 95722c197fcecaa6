"""Grades do not move when the engine's code is moved: a golden record of real grading.

The example exam (``rubrics/grad_accum_engineer.yaml`` with
``examples/grad_accum_engineer.submissions.jsonl``) and the three hand-graded seed answer sets
(``tests/data/seed_answers*.jsonl``) are graded the way ``benchmarks/seed_kinds.py`` grades
them: the packaged e5 embeddings, the shipped scorer, the scripted judge, the judge's budget
plan, one batch per bank. Every grade is then re-scored by the shipped scorer from what it
recorded (``rescore_grades`` with the answers and rubrics, as ``grader calibrate rescore``
does). What each grade says — status, score, criteria with points and evidence, feedback,
confidence, review flag and reasons, who decided — is compared with
``tests/golden/grading.jsonl``, and the shipped scorer file with its recorded hash.

The golden file is written by ``python -m tests.integration.test_grading_golden``: only on
purpose, when grades are meant to change, saying why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import ROOT, RUBRICS
from tests.integration.conftest import _need

pytestmark = pytest.mark.slow

GOLDEN = ROOT / "tests" / "golden" / "grading.jsonl"
EXAMPLE = ("example", RUBRICS / "grad_accum_engineer.yaml",
           ROOT / "examples" / "grad_accum_engineer.submissions.jsonl")  # fmt: skip
SEED_SETS = {
    "seed_1": ROOT / "tests" / "data" / "seed_answers.jsonl",
    "seed_2": ROOT / "tests" / "data" / "seed_answers_2.jsonl",
    "seed_3": ROOT / "tests" / "data" / "seed_answers_3.jsonl",
}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def record(part: str, grade) -> dict:
    """What a grade says to a student and an instructor, in a stable form."""
    scorer = grade.details.scorer
    return {
        "set": part,
        "id": grade.submission_id,
        "status": str(grade.status),
        "method": str(grade.method),
        "score": grade.score,
        "max": grade.max_score,
        "criteria": [[c.id, round(c.points, 2), c.evidence] for c in grade.criteria],
        "feedback": grade.feedback,
        "confidence": None if grade.confidence is None else round(grade.confidence, 2),
        "review": grade.needs_review,
        "reasons": [str(r.code) for r in grade.review_reasons],
        "decided_by": scorer.decided_by if scorer is not None else None,
    }


def grade_all(graded: list | None = None) -> list[dict]:
    """Every golden record: each set graded, then every grade re-scored (the grades
    themselves appended to ``graded`` when given)."""
    from grader.bank.files import load_bank
    from grader.config import JudgeSettings, Settings
    from grader.embed import make_embedder
    from grader.engine.pipeline import Pipeline
    from grader.engine.reading.rubrics import load_rubrics
    from grader.judge import make_judge
    from grader.models import Submission

    settings = Settings(judge=JudgeSettings(backend="scripted", plan="budget"))  # type: ignore[call-arg]
    embedder, judge = make_embedder(settings), make_judge(settings)
    banks = {path: load_bank(path) for path in sorted(RUBRICS.glob("*.yaml"))}
    where = {q.id: path for path, bank in banks.items() for q in bank.questions}
    parts: dict[str, list[dict]] = {EXAMPLE[0]: _rows(EXAMPLE[2])}
    parts.update({name: _rows(path) for name, path in SEED_SETS.items()})
    out: list[dict] = []
    for part, rows in parts.items():
        by_bank: dict[Path, list[Submission]] = defaultdict(list)
        for row in rows:
            fields = {k: row[k] for k in ("id", "question_id", "answer", "student") if k in row}
            by_bank[where[row["question_id"]]].append(Submission(**fields))
        grades, rubrics = [], {}
        for path, submissions in by_bank.items():
            bank = banks[path]
            bank_rubrics = load_rubrics(path, bank)
            rubrics.update(bank_rubrics)
            pipeline = Pipeline(bank, bank_rubrics, judge, settings, embedder=embedder)
            grades.extend(pipeline.grade_many(submissions))
        again = _rescored(grades, rows, rubrics)
        out.extend(record(part, g) for g in grades)
        out.extend(record(f"{part}/rescored", g) for g in again)
        if graded is not None:
            graded.extend([*grades, *again])
    return out


def _rescored(grades, rows, rubrics) -> list:
    from grader.config import Settings
    from grader.engine.finish.rescored import rescore_grades
    from grader.engine.scoring.scorer_model import load_scorer

    answers = {row["id"]: row["answer"] for row in rows}
    below = Settings().review.below_confidence
    return rescore_grades(
        grades, load_scorer("default"), below, answers=answers, rubrics=rubrics
    ).grades


def scorer_hash() -> str:
    """The shipped scorer file's bytes, wherever the engine keeps it."""
    from grader.engine.scoring.scorer_model import DEFAULT_FILE

    return hashlib.sha256(DEFAULT_FILE.read_bytes()).hexdigest()


def test_grades_and_the_shipped_scorer_match_the_golden_record():
    _need("sentence_transformers")
    lines = _rows(GOLDEN)
    head, expected = lines[0], lines[1:]
    assert scorer_hash() == head["scorer_default_sha256"]
    grades: list = []
    found = grade_all(grades)
    assert [(r["set"], r["id"]) for r in found] == [(r["set"], r["id"]) for r in expected]
    # every grade, fresh or re-scored, carries the trail of how its score came to be
    assert all(g.trail and g.trail[-1].after == g.score for g in grades)
    changed = [
        f"{want['set']} {want['id']}: {key} {want[key]!r} -> {got[key]!r}"
        for got, want in zip(found, expected, strict=True)
        for key in want
        if got[key] != want[key]
    ]
    assert changed == []


def main() -> None:
    lines = [{"scorer_default_sha256": scorer_hash()}, *grade_all()]
    GOLDEN.write_text(
        "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8"
    )
    print(f"wrote {GOLDEN}: {len(lines) - 1} records", file=sys.stderr)


if __name__ == "__main__":
    main()
