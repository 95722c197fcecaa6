"""Development and test splits of the public data sets, fixed before any result was looked at.

The data sets live outside the repository, in the folder ``GRADER_DATA_DIR`` names (default
``../shared/data``, beside the checkout; every entry point that reads them takes
``--data-dir`` too): ``mohler/mohler_2011.csv`` and ``sas-ads/train.jsonl``. A missing file
stops the run with its path and how to point at the folder.

Every figure in ``benchmarks/README.md`` names its data and split. Prompts, labels, thresholds
and the default scorer are tuned on the development parts only; the test parts are reported
once per design. The rules (written down on 2026-12-03, before the probability judge or the
scorer were measured):

- **Mohler** (81 questions): questions sorted by ``sha256("grader-split-v1:mohler:" + id)``;
  the first 41 are development, the other 40 test. A question's answers stay together, so a
  test question is one neither the prompts nor the scorer have seen.
- **ADS** (15 questions, 1,107 answers): stratified by question. Within each question, answers
  sorted by ``sha256("grader-split-v1:ads:" + q_id + ":" + id)``, where the id is
  ``ads-NNNN`` with the answer's line number in ``train.jsonl``; the first half
  (rounded up) is development, the rest test. Both parts see every question, as an
  instructor's graded sample of a question would.
- **Graded neighbours** for a test question (the "5 and 10 graded answers per question"
  settings): that question's answers sorted by ``sha256("grader-split-v1:graded:" + question
  + ":" + answer id)``, the first k are the instructor's graded sample and are left out of the
  evaluation of that setting.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from benchmarks.lib.common import ROOT

DATA_ENV = "GRADER_DATA_DIR"
DEFAULT_DATA = ROOT.parent / "shared" / "data"
MOHLER_CSV = ("mohler", "mohler_2011.csv")
ADS_JSONL = ("sas-ads", "train.jsonl")
SALT = "grader-split-v1"


def data_dir() -> Path:
    """The folder holding the public data sets: ``GRADER_DATA_DIR``, else ``../shared/data``."""
    return Path(os.environ.get(DATA_ENV) or DEFAULT_DATA)


def data_file(*parts: str) -> Path:
    """A file of the data folder; a clear stop, naming where it looked, when it is not there."""
    path = data_dir().joinpath(*parts)
    if not path.is_file():
        raise SystemExit(
            f"benchmarks: {path} not found. The public data sets are read from {DATA_ENV} "
            f"(now {data_dir()}; default {DEFAULT_DATA}) or --data-dir: point it at the folder "
            f"holding {'/'.join(MOHLER_CSV)} and {'/'.join(ADS_JSONL)} (benchmarks/README.md)."
        )
    return path


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    """``--data-dir``, for an entry point that reads the public data sets."""
    parser.add_argument(
        "--data-dir",
        type=Path,
        help=f"the folder of the public data sets (default: ${DATA_ENV}, else {DEFAULT_DATA})",
    )


def use_data_dir(args: argparse.Namespace) -> None:
    """Point this run, and the processes it starts, at ``--data-dir`` when given."""
    if getattr(args, "data_dir", None) is not None:
        os.environ[DATA_ENV] = str(args.data_dir.resolve())


def _rank(key: str) -> str:
    return hashlib.sha256(f"{SALT}:{key}".encode()).hexdigest()


@dataclass(frozen=True)
class ScoredAnswer:
    """One human-scored answer, on the data set's own scale."""

    id: str
    question_id: str
    question: str
    references: tuple[str, ...]
    answer: str
    score: float  # the human score (Mohler: the graders' mean; ADS: the course's grader)
    max_score: float
    scores: tuple[float, ...] = ()  # each grader separately, where there are several


def mohler_items(path: Path | None = None) -> list[ScoredAnswer]:
    with (path or data_file(*MOHLER_CSV)).open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [
        ScoredAnswer(
            id=f"mohler-{i:04d}",
            question_id=row["id"],
            question=row["question"],
            references=(row["desired_answer"],),
            answer=row["student_answer"],
            score=float(row["score_avg"]),
            max_score=5.0,
            scores=(float(row["score_me"]), float(row["score_other"])),
        )
        for i, row in enumerate(rows, start=2)  # ids by CSV line, header on line 1
    ]


def ads_items(path: Path | None = None) -> list[ScoredAnswer]:
    items = []
    with (path or data_file(*ADS_JSONL)).open(encoding="utf-8") as f:
        for line_number, line in enumerate(f, start=1):
            row = json.loads(line)
            refs = tuple(r for r in (row["reference1"], row["reference2"], row["reference3"]) if r)
            items.append(
                ScoredAnswer(
                    id=f"ads-{line_number:04d}",
                    question_id=row["q_id"],
                    question=row["question"],
                    references=refs,
                    answer=row["answer"].strip(),
                    score=float(row["score"]),
                    max_score=10.0,
                )
            )
    return items


def mohler_split(items: list[ScoredAnswer]) -> dict[str, list[ScoredAnswer]]:
    """{'dev': ..., 'test': ...}: whole questions, 41 development and 40 test."""
    questions = sorted({i.question_id for i in items}, key=lambda q: _rank(f"mohler:{q}"))
    dev_questions = set(questions[: (len(questions) + 1) // 2])
    return {
        "dev": [i for i in items if i.question_id in dev_questions],
        "test": [i for i in items if i.question_id not in dev_questions],
    }


def ads_split(items: list[ScoredAnswer]) -> dict[str, list[ScoredAnswer]]:
    """{'dev': ..., 'test': ...}: half of every question's answers each."""
    by_question: dict[str, list[ScoredAnswer]] = defaultdict(list)
    for item in items:
        by_question[item.question_id].append(item)
    dev_ids: set[str] = set()
    for question_id, answers in by_question.items():
        ranked = sorted(answers, key=lambda i: _rank(f"ads:{question_id}:{i.id}"))
        dev_ids.update(i.id for i in ranked[: (len(ranked) + 1) // 2])
    return {
        "dev": [i for i in items if i.id in dev_ids],
        "test": [i for i in items if i.id not in dev_ids],
    }


def graded_sample(
    items: list[ScoredAnswer], k: int
) -> tuple[list[ScoredAnswer], list[ScoredAnswer]]:
    """(graded, rest): per question the first ``k`` answers by the seeded rule, and the others."""
    by_question: dict[str, list[ScoredAnswer]] = defaultdict(list)
    for item in items:
        by_question[item.question_id].append(item)
    graded: set[str] = set()
    for question_id, answers in by_question.items():
        ranked = sorted(answers, key=lambda i: _rank(f"graded:{question_id}:{i.id}"))
        graded.update(i.id for i in ranked[:k])
    return [i for i in items if i.id in graded], [i for i in items if i.id not in graded]
