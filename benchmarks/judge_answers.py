"""The answers the judge benchmarks grade: seed answers to chosen questions, or Mohler's.

Shared by ``judge_throughput`` (request-level configurations) and ``judge_plans`` (the judge
plans end to end), so both read the same answers in the same order.
"""

from __future__ import annotations

import json

from benchmarks.common import ROOT
from grader.bank.files import load_bank
from grader.engine.reading.rubrics import load_rubrics, rubric_for
from grader.models import Question, Rubric

SEEDS = ROOT / "tests" / "data" / "seed_answers.jsonl"
EXAMPLES = ROOT / "examples"
BANKS = ROOT / "rubrics"
DEFAULT_QUESTIONS = "004-s5-q1,004-s5-q2"
MIN_ANSWER_CHARS = 2  # blank answers never reach the judge in production either


def seed_items(questions: list[str] | None) -> list[tuple[Question, Rubric, str]]:
    """(question, rubric, answer) for the seed answers and example submissions to ``questions``
    (None: every subjective question of the seed banks)."""
    found: dict[str, tuple[Question, Rubric]] = {}
    for path in sorted(BANKS.glob("*.yaml")):
        bank = load_bank(path)
        rubrics = load_rubrics(path, bank)
        for question in bank.questions:
            wanted = question.id in questions if questions else not question.type.objective
            if wanted:
                found[question.id] = (question, rubric_for(question, rubrics))
    missing = [q for q in questions or [] if q not in found]
    if missing:
        raise SystemExit(f"questions not in any bank under {BANKS}: {', '.join(missing)}")
    items = []
    for path in [SEEDS, *sorted(EXAMPLES.glob("*.submissions.jsonl"))]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            if row["question_id"] in found and len(row["answer"].strip()) >= MIN_ANSWER_CHARS:
                items.append((*found[row["question_id"]], row["answer"]))
    # Keep each question's answers together, as the pipeline does: shared prefixes back to back.
    order = {q: i for i, q in enumerate(questions or sorted(found))}
    return sorted(items, key=lambda item: order[item[0].id])


def ids(text: str) -> list[str]:
    return [q.strip() for q in text.split(",") if q.strip()]


def mohler_items(questions: list[str] | None, count: int) -> list[tuple[Question, Rubric, str]]:
    """(question, rubric, answer) from the Mohler data, with the agreement benchmark's rubric."""
    from benchmarks.agreement import DEFAULT_DATA, build_bank, read_rows, sample, scale_rubric

    rows = sample(read_rows(DEFAULT_DATA), questions, count, seed=0)
    bank = build_bank(rows)
    rubrics = {q.id: scale_rubric(q) for q in bank.questions}
    by_id = {q.id: q for q in bank.questions}
    items = [(by_id[r["id"]], rubrics[r["id"]], r["student_answer"]) for r in rows]
    return sorted(items, key=lambda item: item[0].id)
