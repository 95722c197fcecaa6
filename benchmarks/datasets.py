"""The public data sets as the benchmarks grade them: answers with their part, and a bank.

Shared by the feature table (``scorer_features.py``), the judge's readings (``scorer_judge.py``)
and the studies that grade the data sets again, so they all see the same questions, references
and parts (``splits.py``).
"""

from __future__ import annotations

from benchmarks.common import RESULTS
from benchmarks.splits import ScoredAnswer, ads_items, ads_split, mohler_items, mohler_split
from grader.models import Bank, Question, QuestionType

# The scorer's feature table: production's features of every Mohler and ADS answer.
TABLE = RESULTS / "scorer_features.jsonl.gz"


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
