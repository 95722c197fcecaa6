"""The agreement's exams: which answers are graded by hand and which are scored, per setting.

Mohler test half and ADS test part (``splits.py``), and the Chinese seed-question sets
(``tests/data/seed_answers.jsonl``: development; ``seed_answers_2.jsonl``: the second set),
each question an exam whose cohort is the part's (set's) answers to it. Settings:

- ``none``: no graded answers of the question (the default scorer alone);
- ``graded5`` / ``graded10``: the first 5 / 10 answers of the question by
  ``splits.graded_sample`` are graded, and left out of that setting's evaluation;
- ``dev`` (ADS): every development answer of the question is graded, every test answer
  scored; for the second seed set, the 5 development seed answers of the question.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from benchmarks.lib.common import ROOT
from benchmarks.lib.datasets import as_bank, load
from benchmarks.lib.splits import ScoredAnswer, graded_sample
from grader.bank.files import load_bank
from grader.engine.reading.rubrics import load_rubrics
from grader.models import Bank, Rubric

SEED_SETS = {"seed_dev": "seed_answers.jsonl", "seed_2": "seed_answers_2.jsonl"}


@dataclass(frozen=True)
class Exam:
    """One question of one data set in one setting."""

    dataset: str
    setting: str
    question_id: str
    cohort: list[ScoredAnswer]  # the exam's answers to the question (the part, or the seed set)
    graded: list[ScoredAnswer]  # scored by hand, the scorer's neighbours
    scored: list[ScoredAnswer]  # what the evaluation compares


@dataclass(frozen=True)
class Dataset:
    name: str
    bank: Bank
    rubrics: dict[str, Rubric]
    step: float  # grades are compared on the data set's own steps
    scale: float | None  # seeds (5 to 20 points): compared as shares of 10 points, pooled
    exams: list[Exam]
    graders: dict[str, tuple[float, ...]]  # Mohler: each grader's score, for human–human


def _by_question(items: list[ScoredAnswer]) -> dict[str, list[ScoredAnswer]]:
    out: dict[str, list[ScoredAnswer]] = defaultdict(list)
    for item in items:
        out[item.question_id].append(item)
    return out


def _exams(
    name: str, test: list[ScoredAnswer], dev: list[ScoredAnswer], settings: tuple[str, ...]
) -> list[Exam]:
    exams = []
    dev_by_question = _by_question(dev)
    for qid, cohort in _by_question(test).items():
        for setting in settings:
            if setting == "none":
                graded: list[ScoredAnswer] = []
            elif setting == "dev":
                graded = dev_by_question.get(qid, [])
            else:
                graded = graded_sample(cohort, int(setting.removeprefix("graded")))[0]
            held = {g.id for g in graded}
            scored = [i for i in cohort if i.id not in held]
            exams.append(Exam(name, setting, qid, cohort, graded, scored))
    return exams


def public_dataset(name: str) -> Dataset:
    """Mohler (test half; none, 5, 10 graded) or ADS (test part; and the dev answers)."""
    items, parts, language = load(name)
    test = [i for i in items if parts[i.id] == "test"]
    dev = [i for i in items if parts[i.id] == "dev"]
    settings = ("none", "graded5", "graded10") + (("dev",) if name == "ads" else ())
    mohler = name == "mohler"
    return Dataset(
        name=name,
        bank=as_bank(name, items, language),
        rubrics={},  # derived, as for an imported bank without rubric files
        step=0.5 if mohler else 1.0,
        scale=None,
        exams=_exams(name, test, dev, settings),
        graders={i.id: i.scores for i in test} if mohler else {},
    )


def seed_datasets() -> list[Dataset]:
    """The seed questions with their reviewed rubrics: the development set (no graded
    answers: 5 per question) and the second set (none, 5 and 10 graded, the development
    set's answers as graded)."""
    bank_paths = sorted((ROOT / "rubrics").glob("*.yaml"))
    banks = [load_bank(p) for p in bank_paths]
    rubrics: dict[str, Rubric] = {}
    for path, bank in zip(bank_paths, banks, strict=True):
        rubrics.update(load_rubrics(path, bank))
    bank = Bank(name="seeds", questions=[q for b in banks for q in b.questions])
    questions = {q.id: q for q in bank.questions}
    sets = {name: _seed_items(ROOT / "tests" / "data" / f, questions, rubrics)
            for name, f in SEED_SETS.items()}  # fmt: skip
    plans = {"seed_dev": ("none",), "seed_2": ("none", "graded5", "graded10", "dev")}
    return [
        Dataset(
            name=name,
            bank=bank,
            rubrics=rubrics,
            step=0.5,
            scale=10.0,
            exams=_exams(name, sets[name], sets["seed_dev"], plans[name]),
            graders={},
        )
        for name in SEED_SETS
    ]


def _seed_items(path: Path, questions: dict, rubrics: dict[str, Rubric]) -> list[ScoredAnswer]:
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        question = questions[row["question_id"]]
        items.append(
            ScoredAnswer(
                id=row["id"],
                question_id=row["question_id"],
                question=question.stem,
                references=(question.answer or "",),
                answer=row["answer"],
                score=float(row["human_total"]),
                max_score=rubrics[row["question_id"]].points,
            )
        )
    return items
