"""The scorer's feature table: every Mohler and ADS answer through the production code path.

Each data set becomes a bank with one question per data-set question (reference: Mohler's
desired answer, ADS's *first* reference, as production knows one reference per question;
points: the data set's maximum), its rubric from ``rubric_for`` with no rubric files (derived,
as for a freshly imported bank). Then, per question and part (``splits.py``; a part's answers
to a question are the exam, the cohort), exactly what ``Pipeline.grade_many`` does before the
judge: blank answers and non-answers score 0 by rule (``blank_reason``), the others are
analysed together by ``signals.analysis.analyze_question``, off-topic ones score 0 by rule, and every
answer's features come from ``features.answer_features``. Every answer of the part is also
passed as a graded answer, so blank ones get the signals a graded pool gives them.

Per setting, each answer's graded neighbours (ids and cosines of the production vectors,
nearest first; graded answers with its very text apart, for the copy rule):

- ``graded5`` / ``graded10``: per question the first 5 / 10 answers of the part by
  ``splits.graded_sample`` are graded (they get no entry: not evaluated there);
- ``all_other``: every other answer of the part is graded (ADS dev: the "development answers
  as neighbours" setting; Mohler: leave-one-out within the question).

The judge's readings (``scorer_judge.py``, ``--judge``) are merged in where they exist. One
JSON line per answer (``grader.calibrate.scorer_rows.ScorerRow``, with the answer's text for
the graded answers' wording model), gzipped;
the default scorer is fit from its development rows only.

    python -m benchmarks.scorer_features                      # embeddings only, no lock
    flock /tmp/grader-heavy.lock python -m benchmarks.scorer_features --judge vllm \\
        --datasets mohler --parts dev --limit-per-question 12 --max-minutes 25
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks.datasets import TABLE, as_bank, load
from benchmarks.scorer_judge import add_judge_arguments, judge_seen, production_readings, run_judge
from benchmarks.splits import ScoredAnswer, graded_sample
from grader.calibrate.scorer_rows import Neighbours, ScorerRow, write_rows
from grader.config import EmbeddingSettings, JudgeSettings, Settings
from grader.engine.judging.rule_grades import zero_off_topic
from grader.engine.reading.blanks import blank_reason
from grader.engine.reading.rubrics import rubric_for
from grader.engine.scoring.features import answer_features
from grader.engine.scoring.scorer_core.rules import graded_split
from grader.engine.signals.analysis import analyze_question
from grader.models import GradedAnswer, Question, ReviewCode, Submission
from grader.text import match_key

GRADED_K = (5, 10)
DATASETS = ("mohler", "ads")


def settings_for_table() -> Settings:
    """The production defaults, whatever this shell's GRADER_* variables or .env say."""
    return Settings(
        embeddings=EmbeddingSettings(model="multilingual-e5-small"),
        judge=JudgeSettings(backend="none"),
    )


def question_rows(
    dataset: str,
    question: Question,
    items: list[ScoredAnswer],
    part: str,
    embedder,
    settings: Settings,
) -> list[ScorerRow]:
    """One row per answer of one question in one part, production's numbers."""
    rubric = rubric_for(question, {})
    subs = [Submission(id=i.id, question_id=question.id, answer=i.answer, student=i.id)
            for i in items]  # fmt: skip
    rules = {s.id: blank_reason(s.answer, settings.rules.min_answer_chars) for s in subs}
    graded = [GradedAnswer(id=i.id, question_id=question.id, answer=i.answer, score=i.score)
              for i in items]  # fmt: skip
    analysis = analyze_question(
        question, rubric, [s for s in subs if rules[s.id] is None], embedder, settings.signals,
        graded=graded,
    )  # fmt: skip
    signals = {g.id: s for g, s in analysis.graded}
    rows = []
    for item in items:
        rule = rules[item.id] or (
            ReviewCode.OFF_TOPIC if zero_off_topic(signals[item.id], settings.signals) else None
        )
        rows.append(
            ScorerRow(
                id=item.id,
                question=f"{dataset}:{question.id}",
                dataset=dataset,
                part=part,
                share=item.score / item.max_score,
                points=item.max_score,
                answer=item.answer,
                rule=rule,
                features=answer_features(question, rubric, item.answer, signals[item.id]),
            )
        )
    add_cohort_z(rows, [s.id for s in subs if rules[s.id] is None])
    add_neighbours(rows, items, analysis.vectors)
    return rows


def add_cohort_z(rows: list[ScorerRow], students: list[str], least: int = 5) -> None:
    """``cohort_reference_z`` for research only: each answer's reference margin as a z-score
    among the part's non-blank answers to the question (at least ``least``), as production
    computed it until issue 27; production reads the answer alone now, but the designs that
    read the run (``scorer_cohort.py``, ``one_grade.py``) are still measured on this table."""
    margins = {r.id: r.features.reference_margin for r in rows}
    values = np.array([margins[i] for i in students if margins[i] is not None])
    if len(values) < least:
        return
    spread = float(values.std()) or 1.0
    for row in rows:
        if row.features.reference_margin is not None:
            z = round((row.features.reference_margin - float(values.mean())) / spread, 4)
            row.features = row.features.model_copy(update={"cohort_reference_z": z})


def add_neighbours(rows: list[ScorerRow], items: list[ScoredAnswer], vectors: dict) -> None:
    """Each row's graded answers per setting, by cosine of the analysis' own vectors: the
    neighbours and copies production's rule allows (``scorer_core.rules.graded_split``)."""
    v = np.array([vectors[i.id] for i in items])
    sims = v @ v.T
    keys = [match_key(i.answer) for i in items]
    ids = [i.id for i in items]
    graded_sets = {f"graded{k}": {g.id for g in graded_sample(items, k)[0]} for k in GRADED_K}
    graded_sets["all_other"] = set(ids)
    for me, row in enumerate(rows):
        for setting, chosen in graded_sets.items():
            if setting != "all_other" and row.id in chosen:
                continue  # a graded answer is not evaluated in this setting
            pool = [j for j in range(len(ids)) if ids[j] in chosen]
            near, same = graded_split(ids[me], keys[me], [ids[j] for j in pool],
                                      [keys[j] for j in pool])  # fmt: skip
            others = sorted((j for j, n in zip(pool, near, strict=True) if n),
                            key=lambda j: (-sims[me, j], ids[j]))  # fmt: skip
            row.neighbours[setting] = Neighbours(
                ids=[ids[j] for j in others],
                sims=[round(float(sims[me, j]), 6) for j in others],
                identical=[ids[j] for j, c in zip(pool, same, strict=True) if c],
            )


def dataset_rows(name: str, embedder, settings: Settings) -> list[ScorerRow]:
    items, parts, language = load(name)
    bank = as_bank(name, items, language)
    groups: dict[tuple[str, str], list[ScoredAnswer]] = defaultdict(list)
    for item in items:
        groups[(item.question_id, parts[item.id])].append(item)
    by_id: dict[str, ScorerRow] = {}
    for question in bank.questions:
        for part in ("dev", "test"):
            chosen = groups.get((question.id, part), [])
            if chosen:
                for row in question_rows(name, question, chosen, part, embedder, settings):
                    by_id[row.id] = row
    return [by_id[i.id] for i in items]


def with_judge(rows: list[ScorerRow], readings: dict[str, dict]) -> list[ScorerRow]:
    """Rows with the judge's reading where the judge graded the answer (not a rule)."""
    out = []
    for row in rows:
        seen = judge_seen(readings.get(row.id))
        if seen is not None and row.rule is None:
            row = row.model_copy(update={"judge": seen})
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=TABLE, help="gzipped JSONL feature table")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    add_judge_arguments(parser)
    args = parser.parse_args()

    import torch

    from grader.embed import Embedder

    torch.set_num_threads(args.threads)
    settings = settings_for_table()
    embedder = Embedder(settings.embeddings.model, batch_size=settings.embeddings.batch_size)
    started = time.perf_counter()
    if args.judge != "none":
        finished = run_judge(args, embedder)
        if not finished:
            print("judge run stopped at its time limit: run the same command again to go on")
            raise SystemExit(3)  # a driver loop tells "not finished" from a failure
    rows = [r for name in DATASETS for r in dataset_rows(name, embedder, settings)]
    rows = with_judge(rows, production_readings())
    write_rows(args.out, rows)
    judged = sum(r.judge is not None for r in rows)
    print(
        f"{len(rows)} answers ({judged} with the judge's reading), "
        f"{time.perf_counter() - started:.0f} s, {embedder.stats.encoded} texts encoded, "
        f"{embedder.stats.cache_hits} from the cache, {os.cpu_count()} CPUs -> {args.out}"
    )


if __name__ == "__main__":
    main()
