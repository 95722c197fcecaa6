"""The production probability judge on Mohler and ADS answers, for the scorer's judge features.

``Pipeline.grade_many`` with ``Settings`` (the judge in probability mode, scorer ``none``),
one call per question and part: the part's answers to the question are the cohort, the
sampled ones the batch. Each judged answer's ``features.judge_reading`` (expected points over
the points, mean entropy of the label distributions) is appended to
``results/scorer_judge_<backend>.jsonl`` after every question, so a run stopped at its time
limit (``--max-minutes``: no new question starts after it) goes on where it stopped when run
again. The sample (``--limit-per-question N``): per question the first N answers of the part by
sha256("grader-split-v1:judge:" + question + ":" + answer id), a rule fixed before any run.

``--past-off-topic`` reads instead the answers the off-topic rule zeroed unread (below the
zero margin), into ``results/scorer_judge_<backend>_offtopic.jsonl``: the off-topic study
(``offtopic_veto.py``) weighs them, and ``production_readings`` hands the scorer those of the
answers today's rule grades (they sit among their classmates).

The table (``scorer_features.py``) takes the ``vllm`` readings; ``--judge scripted`` is a dry
run of the same path without a model. A reading records the prompt version: when the judge's
prompt changes, delete the file and run again (``scorer_features.py`` refuses two versions in
one data set; Mohler's English and ADS's Chinese prompts differ).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.common import RESULTS
from benchmarks.datasets import TABLE, as_bank, load
from benchmarks.splits import SALT, ScoredAnswer
from grader.calibrate.scorer_rows import JudgeSeen
from grader.config import EmbeddingSettings, JudgeSettings, ScorerSettings, Settings, SignalSettings
from grader.engine.scoring.features import judge_reading
from grader.models import Grade, GradeStatus, Submission

PAST_EVERY_MARGIN = -1.0  # an off-topic zero margin no answer's topic margin is below


def readings_path(backend: str, past_off_topic: bool = False) -> Path:
    """Production's readings; ``past_off_topic``: those of the answers the off-topic rule
    zeroed unread, read for the off-topic study (``offtopic_veto.py``)."""
    return RESULTS / f"scorer_judge_{backend}{'_offtopic' if past_off_topic else ''}.jsonl"


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "the judge (loads vLLM: run under flock /tmp/grader-heavy.lock)"
    )
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


def judge_readings(backend: str = "vllm", past_off_topic: bool = False) -> dict[str, dict]:
    """Readings by answer id; one prompt version per data set (each has one language, and
    each language its own prompt; a changed prompt means a new run)."""
    path = readings_path(backend, past_off_topic)
    if not path.exists():
        return {}
    found = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    versions: dict[str, set[str]] = defaultdict(set)
    for r in found:
        if r.get("prompt_version"):
            versions[r["dataset"]].add(r["prompt_version"])
    mixed = {name: sorted(v) for name, v in versions.items() if len(v) > 1}
    if mixed:
        raise SystemExit(f"{path} mixes prompt versions {mixed}: delete and rerun")
    return {r["id"]: r for r in found}


def production_readings(backend: str = "vllm") -> dict[str, dict]:
    """What production's judge reads: the readings, and for an answer those runs' off-topic
    rule zeroed unread but today's rule grades (it sits among its classmates), its reading
    taken past the rule."""
    readings = judge_readings(backend)
    for answer_id, found in judge_readings(backend, past_off_topic=True).items():
        if readings.get(answer_id, {}).get("share") is None:
            readings[answer_id] = found
    return readings


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

    os.environ.setdefault("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "3600")  # see PLAN "Notices"
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


def judge_seen(found: dict | None) -> JudgeSeen | None:
    """A reading line as the table's ``JudgeSeen``; None when the judge gave no reading."""
    if found is None or found.get("share") is None:
        return None
    return JudgeSeen(share=found["share"], entropy=found.get("entropy"), score=found.get("score"))


def submission_of(item: ScoredAnswer) -> Submission:
    return Submission(id=item.id, question_id=item.question_id, answer=item.answer,
                      student=item.id)  # fmt: skip
