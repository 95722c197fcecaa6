"""The scorer's feature table: every Mohler and ADS answer through the production code path.

Each data set becomes a bank with one question per data-set question (reference: Mohler's
desired answer, ADS's *first* reference, as production knows one reference per question;
points: the data set's maximum), its rubric from ``rubric_for`` with no rubric files (derived,
as for a freshly imported bank). Then, per question and part (``splits.py``; a part's answers
to a question are the exam, the cohort), exactly what ``Pipeline.grade_many`` does before the
judge: blank answers and non-answers score 0 by rule (``blank_reason``), the others are
analysed together by ``signals.analyze_question``, off-topic ones score 0 by rule, and every
answer's features come from ``features.answer_features``. Every answer of the part is also
passed as a graded answer, so blank ones get the signals a graded pool gives them.

Per setting, each answer's graded neighbours (ids and cosines of the production vectors,
nearest first; graded answers with its very text apart, for the copy rule):

- ``graded5`` / ``graded10``: per question the first 5 / 10 answers of the part by
  ``splits.graded_sample`` are graded (they get no entry: not evaluated there);
- ``all_other``: every other answer of the part is graded (ADS dev: the "development answers
  as neighbours" setting; Mohler: leave-one-out within the question).

The judge's readings (``lib/readings.py``) are merged in where they exist. One JSON line per
answer (``grader.calibrate.scorer_rows.ScorerRow``, with the answer's text for the graded
answers' wording model), gzipped. The shipped scorer is fit from its development rows only:
``--scorer-out grader/engine/scoring/scorer_default.json`` writes ``fit_default`` of them
(``tests/unit/test_scorer_default.py`` checks the shipped file against a fresh fit).

``--judge vllm`` first asks the production probability judge (``Pipeline.grade_many``,
scorer ``none``), one call per question and part, and appends each judged answer's reading
to ``results/scorer_judge_vllm.jsonl`` after every question, so a run stopped at its time
limit (``--max-minutes``: no new question starts after it; exit status 3) goes on where it
stopped when run again. The sample (``--limit-per-question N``): per question the first N
answers of the part by sha256("grader-split-v1:judge:" + question + ":" + answer id), a rule
fixed before any run. ``--past-off-topic`` reads instead the answers the off-topic rule
zeroed unread. ``--judge scripted`` is a dry run of the same path without a model.

    python -m benchmarks.feature_table                        # embeddings only, minutes
    python -m benchmarks.feature_table --from-table --scorer-out grader/engine/scoring/scorer_default.json
    python -m benchmarks.feature_table --judge vllm --datasets mohler --parts dev \\
        --limit-per-question 12 --max-minutes 25
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks.lib.datasets import TABLE, as_bank, load, load_table, settings_for_table
from benchmarks.lib.readings import judge_readings, judge_seen, production_readings, readings_path
from benchmarks.lib.splits import (
    SALT,
    ScoredAnswer,
    add_data_dir,
    graded_sample,
    use_data_dir,
)
from grader.calibrate.scorer_rows import Neighbours, ScorerRow, write_rows
from grader.config import (
    EmbeddingSettings,
    JudgeSettings,
    ScorerSettings,
    Settings,
    SignalSettings,
)
from grader.engine.judging.rule_grades import zero_off_topic
from grader.engine.reading.blanks import blank_reason
from grader.engine.reading.rubrics import rubric_for
from grader.engine.scoring.features import answer_features, judge_reading
from grader.engine.scoring.scorer_core.rules import graded_split
from grader.engine.signals.analysis import analyze_question
from grader.models import Grade, GradedAnswer, GradeStatus, Question, ReviewCode, Submission
from grader.text import match_key

GRADED_K = (5, 10)
DATASETS = ("mohler", "ads")
PAST_EVERY_MARGIN = -1.0  # an off-topic zero margin no answer's topic margin is below


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
    computed it before one answer got one grade. Production reads the answer alone now; the column stays so
    that a rebuilt table equals the one the research log's designs read."""
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


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the judge's readings (--judge vllm loads the model)")
    group.add_argument("--judge", choices=("vllm", "scripted", "none"), default="none")
    group.add_argument("--datasets", nargs="+", default=["mohler", "ads"])
    group.add_argument("--parts", nargs="+", default=["dev", "test"])
    group.add_argument("--limit-per-question", type=int, default=0, help="0: every answer")
    group.add_argument("--max-minutes", type=float, default=25.0,
                       help="start no question after this; run again to go on")  # fmt: skip
    group.add_argument("--past-off-topic", action="store_true",
                       help="read the answers the off-topic rule zeroed unread instead (their "
                            "readings go to a file of their own)")  # fmt: skip


def judge_sample(items: list[ScoredAnswer], limit: int) -> list[ScoredAnswer]:
    """Per question the first ``limit`` answers by the seeded rule (all when 0)."""
    if not limit:
        return items
    by_question: dict[str, list[ScoredAnswer]] = defaultdict(list)
    for item in items:
        by_question[item.question_id].append(item)
    chosen = set()
    for qid, answers in by_question.items():
        ranked = sorted(answers, key=lambda i: _rank(f"judge:{qid}:{i.id}"))
        chosen.update(i.id for i in ranked[:limit])
    return [i for i in items if i.id in chosen]


def _rank(key: str) -> str:
    return hashlib.sha256(f"{SALT}:{key}".encode()).hexdigest()


def reading_line(grade: Grade, dataset: str, question: str) -> dict:
    """What the table needs from one grade, and where it came from."""
    judged = grade.details.judge_mode == "probability"
    reading = judge_reading(grade) if judged and grade.status == GradeStatus.GRADED else None
    return {
        "id": grade.submission_id,
        "dataset": dataset,
        "question": question,
        "status": str(grade.status),
        "rule": None if judged else [str(r.code) for r in grade.review_reasons],
        "score": grade.score,
        "share": None if reading is None else round(reading.share, 6),
        "entropy": None
        if reading is None or reading.entropy is None
        else round(reading.entropy, 6),
        "prompt_version": grade.provenance.prompt_version,
        "model": grade.provenance.model,
        "latency_s": grade.provenance.latency_s,
    }


def run_judge(args: argparse.Namespace, embedder, judge=None) -> bool:
    """Judge the chosen answers not judged yet (with ``judge`` when given, else one made
    when the first is due); False when the time limit stopped it."""
    from grader.calibrate.scorer_rows import read_rows
    from grader.engine.pipeline import Pipeline
    from grader.judge import make_judge

    os.environ.setdefault("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "3600")  # long CPU batches
    past = args.past_off_topic
    margin = {"offtopic_zero_margin": PAST_EVERY_MARGIN} if past else {}
    settings = Settings(
        judge=JudgeSettings(backend=args.judge, mode="probability"),
        scorer=ScorerSettings(choice="none"),
        embeddings=EmbeddingSettings(model="multilingual-e5-small"),
        signals=SignalSettings(**margin),
    )
    path = readings_path(args.judge, past)
    done = set(judge_readings(args.judge, past)) if path.exists() else set()
    zeroed = {r.id for r in read_rows(TABLE) if r.rule == "off_topic"} if past else set()
    started = time.perf_counter()
    for dataset in args.datasets:
        items, parts, language = load(dataset)
        bank = as_bank(dataset, items, language)
        for part in args.parts:
            chosen = [i for i in items if parts[i.id] == part]
            wanted = (
                {i.id for i in chosen} & zeroed
                if past
                else {i.id for i in judge_sample(chosen, args.limit_per_question)}
            ) - done
            for question in bank.questions:
                batch = [i for i in chosen if i.question_id == question.id and i.id in wanted]
                if not batch:
                    continue
                if (time.perf_counter() - started) / 60 > args.max_minutes:
                    return False
                judge = judge or make_judge(settings)
                pipeline = Pipeline(bank, {}, judge, settings, embedder=embedder)
                cohort = [submission_of(i) for i in chosen if i.question_id == question.id]
                t0 = time.perf_counter()
                grades = pipeline.grade_many([submission_of(i) for i in batch], cohort=cohort)
                with path.open("a", encoding="utf-8") as f:
                    for grade in grades:
                        line = reading_line(grade, dataset, question.id)
                        f.write(json.dumps(line, ensure_ascii=False) + "\n")
                print(f"{dataset} {part} {question.id}: {len(batch)} answers, "
                      f"{time.perf_counter() - t0:.0f} s", flush=True)  # fmt: skip
    return True


def submission_of(item: ScoredAnswer) -> Submission:
    return Submission(id=item.id, question_id=item.question_id, answer=item.answer,
                      student=item.id)  # fmt: skip


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m benchmarks.feature_table", description=__doc__.split("\n\n")[0]
    )
    found.add_argument("--out", type=Path, default=TABLE, help="gzipped JSONL feature table")
    found.add_argument("--threads", type=int, default=2, help="torch threads")
    found.add_argument(
        "--from-table",
        action="store_true",
        help="build nothing: read the table --out names (with --scorer-out)",
    )
    found.add_argument(
        "--scorer-out",
        type=Path,
        help="write the default scorer, fit on the table's development rows, here",
    )
    add_data_dir(found)
    add_judge_arguments(found)
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    use_data_dir(args)
    if not args.from_table:
        build(args)
    if args.scorer_out:
        from grader.calibrate.scorer_fit import fit_default
        from grader.engine.scoring.scorer_model import to_json

        dev = [r for r in load_table(args.out) if r.part == "dev"]
        args.scorer_out.write_text(to_json(fit_default(dev)), encoding="utf-8")
        print(f"wrote {args.scorer_out} (fit on {len(dev)} development rows)")


def build(args: argparse.Namespace) -> None:
    """The judge's readings first when asked, then every answer's row, then the file."""
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
