"""The public data sets as the benchmarks grade them: answers with their part, a bank, and
the scorer's feature table built from them.

Shared by the feature table (``feature_table.py``), the judge's readings (``readings.py``)
and the entry points that grade the data sets again, so they all see the same questions,
references and parts (``splits.py``).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.lib.common import RESULTS
from benchmarks.lib.splits import ScoredAnswer, ads_items, ads_split, mohler_items, mohler_split
from grader.calibrate.scorer_rows import ScorerRow, read_rows
from grader.config import EmbeddingSettings, JudgeSettings, Settings
from grader.models import Bank, Question, QuestionType

# The scorer's feature table: production's features of every Mohler and ADS answer
# (``python -m benchmarks.feature_table``); the shipped scorer is fit from its dev rows.
TABLE = RESULTS / "scorer_features.jsonl.gz"


def load_table(path: Path = TABLE) -> list[ScorerRow]:
    """Every row of the feature table (both data sets, both parts)."""
    return read_rows(path)


def load(name: str) -> tuple[list[ScoredAnswer], dict[str, str], str]:
    """(items, part by answer id, language) of one data set."""
    items, split, language = (
        (mohler_items(), mohler_split, "en") if name == "mohler" else (ads_items(), ads_split, "zh")
    )
    parts = {i.id: part for part, chosen in split(items).items() for i in chosen}
    return items, parts, language


def as_bank(name: str, items: list[ScoredAnswer], language: str) -> Bank:
    """One short-answer question per data-set question, with its first reference."""
    firsts: dict[str, ScoredAnswer] = {}
    for item in items:
        firsts.setdefault(item.question_id, item)
    questions = [
        Question(
            id=qid,
            number=qid,
            section=name,
            type=QuestionType.SHORT_ANSWER,
            stem=first.question,
            answer=first.references[0],
            points=first.max_score,
            language=language,  # type: ignore[arg-type]
        )
        for qid, first in firsts.items()
    ]
    return Bank(name=name, questions=questions)


def settings_for_table() -> Settings:
    """The production defaults the table is built and replayed with, whatever this shell's
    GRADER_* variables or .env say."""
    return Settings(
        embeddings=EmbeddingSettings(model="multilingual-e5-small"),
        judge=JudgeSettings(backend="none"),
    )
