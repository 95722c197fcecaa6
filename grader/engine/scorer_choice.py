"""Which scorer grades an exam: an explicit choice, the exam's own file, or the shipped default.

An exam may carry its own scorer, refit on its instructor's grades (``grader calibrate fit``),
as ``scorer.json`` in the folder of its rubrics (``rubrics/<bank>/scorer.json``). The order:

1. an explicit choice — ``grader grade --scorer``, or ``GRADER_SCORER``: ``default`` (the
   shipped file), ``none`` (the judge's points stand) or the path of a scorer file;
2. the exam's own file, when it has one;
3. the shipped default.

The grading service puts one step between 1 and 2: a scorer an instructor applied on the
instructor pages, kept in the database (``grader.service.exams``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.engine.rubrics import rubric_dir
from grader.engine.scorer import ScorerSet, load_scorer

EXAM_SCORER_FILE = "scorer.json"


def exam_scorer_path(bank_path: Path) -> Path:
    """Where an exam's own scorer lives: beside its rubrics."""
    return rubric_dir(Path(bank_path)) / EXAM_SCORER_FILE


@dataclass(frozen=True)
class ScorerChoice:
    """The scorer (None: the judge decides) and where it came from, for messages."""

    scorer: ScorerSet | None
    source: str  # "none", "default", "exam file <path>", "file <path>"


def choose_scorer(choice: str | None, bank_path: Path | None = None) -> ScorerChoice:
    """The scorer for an exam: ``choice`` when given, else the exam's file, else the default.

    A file that is wrong (unreadable, edited by hand, another schema) is a ``ConfigError``
    naming it, never a silent fall-back to another scorer.
    """
    if choice is not None:
        source = choice if choice in {"default", "none"} else f"file {choice}"
        return ScorerChoice(load_scorer(choice), source)
    if bank_path is not None:
        own = exam_scorer_path(bank_path)
        if own.is_file():
            return ScorerChoice(load_scorer(str(own)), f"exam file {own}")
    return ScorerChoice(load_scorer("default"), "default")
