"""Integrity check: different students' answers to one question that are nearly the same text.

Embeddings find the candidates (a copy with light edits stays above the ``duplicate_cosine``
threshold), shared wording confirms them (``copies.is_copy``: two answers in their own
words can sit above it too), and the report puts both answers side by side so an instructor
decides. Objective questions are left out: identical choices are
expected there. The report is HTML with every answer escaped: answers are untrusted text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from grader.config import RuleSettings, SignalSettings
from grader.engine.reading.blanks import blank_reason
from grader.engine.signals.analysis import copied_pairs
from grader.models import Bank, Submission

if TYPE_CHECKING:
    from grader.embed import Embedder

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


@dataclass(frozen=True)
class SuspectPair:
    question_id: str
    similarity: float
    first: Submission
    second: Submission

    def as_json(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "similarity": self.similarity,
            "first": self.first.model_dump(mode="json"),
            "second": self.second.model_dump(mode="json"),
        }


def suspect_pairs(
    bank: Bank,
    submissions: Sequence[Submission],
    embedder: Embedder,
    rules: RuleSettings,
    signals: SignalSettings,
) -> list[SuspectPair]:
    """Near-duplicate pairs per subjective question, most similar first."""
    by_question: dict[str, list[Submission]] = defaultdict(list)
    for s in submissions:
        question = bank.get(s.question_id)
        subjective = question is not None and not question.type.objective
        if subjective and blank_reason(s.answer, rules.min_answer_chars) is None:
            by_question[s.question_id].append(s)
    pairs = []
    for qid, answers in by_question.items():
        vectors = embedder.encode([s.answer for s in answers])
        stem = bank.question(qid).stem  # subjective: in the bank
        for pair in copied_pairs(answers, vectors, signals, stem):
            pairs.append(
                SuspectPair(qid, pair.similarity, answers[pair.first], answers[pair.second])
            )
    pairs.sort(key=lambda p: (-p.similarity, p.question_id, p.first.id))
    return pairs


def write_report(
    pairs: list[SuspectPair],
    path: Path,
    *,
    bank: Bank,
    source: Path,
    signals: SignalSettings,
    answers: int,
) -> None:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"])
    )
    html = env.get_template("integrity.html.j2").render(
        pairs=pairs,
        bank=bank,
        source=source,
        answers=answers,
        threshold=signals.duplicate_cosine,
        min_chars=signals.duplicate_min_chars,
        made=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
