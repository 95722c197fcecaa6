"""The answers the judge's speed is measured on: seed answers to chosen questions, or Mohler's.

Shared by ``judge_throughput``'s request-level configurations and its plans and modes
(``judge_runs``), so all read the same answers in the same order.

Mohler questions get one rubric, derived from the 0–5 scale (``scale_rubric``). A small judge
does badly with one holistic 0–5 score and well with a few small criteria whose points are
summed in code, but Mohler references are mostly one sentence, so cutting them into key
points leaves one 5-point criterion. Every question therefore gets the same two criteria,
filled with its reference: ``C1`` correctness (3 points, levels 3/2/1/0: the central claim
means what the reference says, and nothing it states is wrong) and ``C2`` completeness (2
points, levels 2/1/0: the reference's statements, listed as key points).
"""

from __future__ import annotations

import csv
import json
import random
from collections import defaultdict

from benchmarks.lib.common import ROOT
from benchmarks.lib.splits import MOHLER_CSV, data_file
from grader.bank.files import load_bank
from grader.engine.reading.rubrics import key_points_of, load_rubrics, rubric_for
from grader.models import Bank, Criterion, Level, Question, QuestionType, Rubric

SEEDS = ROOT / "tests" / "data" / "seed_answers.jsonl"
EXAMPLES = ROOT / "examples"
BANKS = ROOT / "rubrics"
DEFAULT_QUESTIONS = "004-s5-q1,004-s5-q2"
MIN_ANSWER_CHARS = 2  # blank answers never reach the judge in production either
MAX_POINTS = 5.0


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
    """(question, rubric, answer) from the Mohler data: ``count`` answers spread evenly over
    ``questions`` (None: all), each question with the scale rubric."""
    rows = sample(read_rows(), questions, count, seed=0)
    bank = build_bank(rows)
    rubrics = {q.id: scale_rubric(q) for q in bank.questions}
    by_id = {q.id: q for q in bank.questions}
    items = [(by_id[r["id"]], rubrics[r["id"]], r["student_answer"]) for r in rows]
    return sorted(items, key=lambda item: item[0].id)


def read_rows() -> list[dict]:
    """The Mohler CSV's rows, each with its line number."""
    path = data_file(*MOHLER_CSV)
    with path.open(encoding="utf-8", newline="") as handle:
        return [{**row, "line": n} for n, row in enumerate(csv.DictReader(handle), start=2)]


def sample(
    rows: list[dict], questions: list[str] | None, limit: int | None, seed: int
) -> list[dict]:
    """The rows to grade: all, or ``limit`` of them spread evenly over the questions."""
    if questions:
        known = {r["id"] for r in rows}
        missing = [q for q in questions if q not in known]
        if missing:
            raise SystemExit(f"unknown question ids: {', '.join(missing)}")
        rows = [r for r in rows if r["id"] in questions]
    if not limit or limit >= len(rows):
        return rows
    by_question: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_question[row["id"]].append(row)
    rng = random.Random(seed)
    queues = []
    for qid in sorted(by_question, key=_question_order):
        group = list(by_question[qid])
        rng.shuffle(group)
        queues.append(group)
    picked: list[dict] = []
    while len(picked) < limit:
        for group in queues:
            if group and len(picked) < limit:
                picked.append(group.pop())
    return sorted(picked, key=lambda r: r["line"])


def _question_order(qid: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in qid.split("."))


def build_bank(rows: list[dict]) -> Bank:
    questions = {}
    for row in rows:
        questions.setdefault(
            row["id"],
            Question(
                id=row["id"],
                number=row["id"],
                section="Mohler 2011",
                type=QuestionType.SHORT_ANSWER,
                stem=row["question"].strip(),
                answer=row["desired_answer"].strip(),
                points=MAX_POINTS,
                language="en",
            ),
        )
    return Bank(name="mohler_2011", papers=["mohler_2011.csv"], questions=list(questions.values()))


def scale_rubric(question: Question) -> Rubric:
    """Correctness (3) + completeness (2): the 0–5 scale in two small criteria (the module docstring)."""
    reference = str(question.answer)
    key_points = key_points_of(reference) or [reference]
    return Rubric(
        question_id=question.id,
        points=MAX_POINTS,
        criteria=[
            Criterion(
                id="C1",
                description="Correctness: the answer's main claim means what the reference "
                "answer says (other words are fine) and nothing it states is wrong",
                points=3,
                key_points=[reference],
                levels=[
                    Level(points=3, descriptor="same meaning as the reference, no errors"),
                    Level(points=2, descriptor="mostly right; a minor error or vague wording"),
                    Level(points=1, descriptor="related to the topic but largely wrong"),
                    Level(points=0, descriptor="wrong, off topic or no answer"),
                ],
            ),
            Criterion(
                id="C2",
                description="Completeness: covers the reference answer's key points",
                points=2,
                key_points=key_points,
                levels=[
                    Level(points=2, descriptor="all key points"),
                    Level(points=1, descriptor="some key points"),
                    Level(points=0, descriptor="none of them"),
                ],
            ),
        ],
        reviewed=False,
        notes="benchmark rubric: correctness + completeness against the reference",
    )
