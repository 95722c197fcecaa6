"""Grade a few, trust the rest, on the seed questions: ``review_queue --seeds``.

The hand-graded seed answers to the project's own rubrics (``rubrics/``), graded the way
``grader grade --graded TO_GRADE.csv`` grades them: per question, K answers are the
instructor's (their hand scores become graded answers beside the rubric's scored anchors),
chosen by ``engine.review.suggest.suggest`` (what ``grader suggest`` writes) or at random (five
seeded draws); the rest go through the production pipeline (e5, the shipped scorer, the
judge's default budget plan with the scripted judge: the plan asks no criterion check of a
Chinese answer, so those grades are production's). Then:

- Pearson and MAE (points) on the rest;
- the review queue at 10, 20 and 30 % of each question's answers plus the hard ones, ranked
  by expected error as ``engine.review.queue.rank_grades`` ranks them and counted as the
  ADS and Mohler queues are (``review_replay.catch``): the share of the large errors
  (|grade − hand score| ≥ 25 % of the points) it holds, against a random queue of the same
  size (its expectation) and the best any ranking could do.

Development: seed sets 1 and 3 together (``tests/data/seed_answers.jsonl`` and
``seed_answers_3.jsonl``, 13 answers to each of 8 questions). Held out: set 2
(``seed_answers_2.jsonl``, 16 to each), read once (``--held-out``). With so few answers a
question's 20 % budget is one or two answers: the figures are small counts, read them so.

    python -m benchmarks.review_queue --seeds --out benchmarks/results/seed_grade_first.json
    python -m benchmarks.review_queue --seeds --held-out \
        --out benchmarks/results/seed_grade_first_2.json
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from benchmarks.lib.common import ROOT, code_version, command, write_result
from benchmarks.lib.replay import RATES, Answer, Scored, catch
from grader.bank.files import load_bank
from grader.calibrate.scorer_rows import ScorerRow
from grader.config import JudgeSettings, Settings
from grader.embed import make_embedder
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.engine.review.queue import RANKING, expected_error, is_hard, unranked
from grader.engine.review.suggest import suggest
from grader.engine.scoring.scorer_model import AnswerFeatures
from grader.judge import make_judge
from grader.models import Grade, GradedAnswer, Submission

DEV = ("seed_answers.jsonl", "seed_answers_3.jsonl")
HELD_OUT = ("seed_answers_2.jsonl",)
KS = (5, 10)
DRAWS = 5  # random picks compared with the chosen ones, each seeded

Picker = Callable[[list[Submission], int], list[Submission]]


class Seeds:
    """The seed answers of some sets, with their banks, pipelines and hand scores."""

    def __init__(self, files: Sequence[str]):
        rows = [json.loads(line) for f in files
                for line in (ROOT / "tests" / "data" / f).read_text(encoding="utf-8").splitlines()
                if line]  # fmt: skip
        self.human = {r["id"]: float(r["human_total"]) for r in rows}
        self.settings = Settings(judge=JudgeSettings(backend="scripted"))
        self.embedder = make_embedder(self.settings)
        judge = make_judge(self.settings)
        self.pipelines: dict[str, Pipeline] = {}
        self.by_question: dict[str, list[Submission]] = defaultdict(list)
        for path in sorted((ROOT / "rubrics").glob("*.yaml")):
            bank = load_bank(path)
            ids = {q.id for q in bank.questions}
            if not ids & {r["question_id"] for r in rows}:
                continue
            pipeline = Pipeline(bank, load_rubrics(path, bank), judge, self.settings,
                                embedder=self.embedder)  # fmt: skip
            for qid in ids:
                self.pipelines[qid] = pipeline
        for r in rows:
            self.by_question[r["question_id"]].append(Submission(
                id=r["id"], question_id=r["question_id"], answer=r["answer"],
                student=r["student"]))  # fmt: skip

    def chosen(self, answers: list[Submission], k: int) -> list[Submission]:
        """``engine.review.suggest.suggest`` for one question: what ``grader suggest`` writes."""
        pipeline = self.pipelines[answers[0].question_id]
        return suggest(pipeline.bank, answers, self.embedder, self.settings.rules, k)

    def grade(self, pick: Picker, k: int) -> list[tuple[Grade, float]]:
        """Every answer not picked, graded with the picked ones' hand scores as graded
        answers: (grade as the pipeline ranks it, hand score)."""
        out = []
        for answers in self.by_question.values():
            picked = pick(answers, k)
            taken = {s.id for s in picked}
            graded = [GradedAnswer(id=s.id, question_id=s.question_id, answer=s.answer,
                                   score=self.human[s.id]) for s in picked]  # fmt: skip
            rest = [s for s in answers if s.id not in taken]
            pipeline = self.pipelines[answers[0].question_id]
            grades = pipeline.grade_many(rest, graded=graded)
            out += [(g, self.human[g.submission_id]) for g in grades]
        return out


def randomly(seed: int) -> Picker:
    def pick(answers: list[Submission], k: int) -> list[Submission]:
        ordered = sorted(answers, key=lambda s: s.id)
        return random.Random(f"{seed}:{ordered[0].question_id}").sample(ordered, k)

    return pick


def agreement(graded: list[tuple[Grade, float]]) -> dict:
    got = np.array([g.score or 0.0 for g, _ in graded])
    human = np.array([h for _, h in graded])
    return {
        "answers": len(graded),
        "pearson": round(float(np.corrcoef(got, human)[0, 1]), 4),
        "mae": round(float(np.mean(np.abs(got - human))), 4),
    }


def as_answer(grade: Grade, human: float) -> Answer:
    """A ranked grade as the replay's queue count reads it: its hard reason, and whether the
    ranking orders it (a model-scored grade: ``expected_error`` is not None)."""
    points = grade.max_score or 1.0
    row = ScorerRow(id=grade.submission_id, question=grade.question_id, share=human / points,
                    points=points, features=AnswerFeatures())  # fmt: skip
    reasons = [r.code.value for r in grade.review_reasons if r.code not in RANKING]
    hard = reasons[0] if is_hard(grade) else None
    ranked = None if expected_error(grade) is None else Scored(grade.confidence, {}, "", [], [])
    return Answer(row, 0, (grade.score or 0.0) / points, hard, ranked)


def queue(graded: list[tuple[Grade, float]]) -> dict:
    """``review_replay.catch`` over the grades as production ranks them: the hard ones plus
    the budget's top by expected error, against a random queue of the same size and the best
    any ranking could reach."""
    grades = [unranked(g) for g, _ in graded]
    answers = [as_answer(g, h) for g, (_, h) in zip(grades, graded, strict=True)]
    error = {g.submission_id: expected_error(g) or 0.0 for g in grades}
    return catch(answers, {"ranked": lambda a: error[a.row.id]}, RATES)


def main_seeds(held_out: bool, out: Path | None) -> None:
    """``review_queue --seeds``: per K, the chosen picks and five random ones, graded and
    queued."""
    files = HELD_OUT if held_out else DEV
    seeds = Seeds(files)
    result: dict = {
        "benchmark": "review_queue --seeds",
        "command": command(),
        "code": code_version("grader", "benchmarks"),
        "data": f"{', '.join(files)} ({'held out' if held_out else 'development'})",
        "settings": "e5, the shipped scorer, judge plan budget (scripted judge), rubrics/",
    }
    for k in KS:
        draws = []
        for seed in range(DRAWS):
            graded = seeds.grade(randomly(seed), k)
            draws.append({**agreement(graded), "queue": queue(graded)})
        graded = seeds.grade(seeds.chosen, k)
        chosen = {**agreement(graded), "queue": queue(graded)}
        result[f"K={k}"] = {
            "chosen": chosen,
            "random": draws,
            "random_mean_pearson": round(float(np.mean([d["pearson"] for d in draws])), 4),
            "random_mean_mae": round(float(np.mean([d["mae"] for d in draws])), 4),
        }
        print(k, "chosen", chosen["pearson"], "random", result[f"K={k}"]["random_mean_pearson"],
              "queue 20%", chosen["queue"]["20%"], flush=True)  # fmt: skip
    write_result(result, out)
