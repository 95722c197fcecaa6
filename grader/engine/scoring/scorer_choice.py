"""Which scorer grades an exam, decided here and nowhere else.

An exam may carry its own scorer, refit on its instructor's grades (``grader calibrate fit``),
as ``scorer.json`` in the folder of its rubrics (``rubrics/<bank>/scorer.json``). The order:

0. no embeddings, no scorer: it reads embedding signals, so without them the judge decides;
1. an explicit choice — ``grader grade --scorer``, or ``GRADER_SCORER``: ``default`` (the
   shipped file), ``none`` (the judge's points stand) or the path of a scorer file;
2. in the grading service, the scorer an instructor applied on the instructor pages, kept in
   its database (``AppliedScorer``);
3. the exam's own file, when it has one;
4. the shipped default.

``Pipeline``, the command line, the service's workers and its refits all ask
``choose_scorer``; only this module reads a scorer file for grading.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from grader.engine.reading.rubrics import rubric_dir
from grader.engine.scoring.scorer_model import DEFAULT_FILE, ScorerSet, from_json, load_scorer

EXAM_SCORER_FILE = "scorer.json"


def exam_scorer_path(bank_path: Path) -> Path:
    """Where an exam's own scorer lives: beside its rubrics."""
    return rubric_dir(Path(bank_path)) / EXAM_SCORER_FILE


class ScorerKind(StrEnum):
    """What an explicit choice names (``GRADER_SCORER``, ``--scorer``, ``--base``)."""

    DEFAULT = "default"  # the shipped scorer
    NONE = "none"  # no scorer: the judge's points stand
    FILE = "file"  # a scorer file


@dataclass(frozen=True)
class ScorerSetting:
    """An explicit choice, parsed once from the setting's text (``scorer_setting``)."""

    kind: ScorerKind
    path: Path | None = None  # the file, for ``ScorerKind.FILE`` only

    def __post_init__(self) -> None:
        if (self.kind is ScorerKind.FILE) != (self.path is not None):
            raise ValueError("a scorer setting names a path exactly when it is a file")


def scorer_setting(text: str | None) -> ScorerSetting | None:
    """``"default"``, ``"none"``, else the path of a scorer file; None when unset. The
    setting's accepted values are the environment's (``GRADER_SCORER``)."""
    if text is None:
        return None
    if text in (ScorerKind.DEFAULT, ScorerKind.NONE):
        return ScorerSetting(ScorerKind(text))
    return ScorerSetting(ScorerKind.FILE, Path(text))


class AppliedScorer(Protocol):
    """A scorer an instructor applied to an exam on the instructor pages, as the service's
    store keeps it (``ExamScorer``); its text is read only when it is the one that grades."""

    @property
    def exam(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def text(self) -> str: ...  # the scorer file, as ``scorer.to_json`` wrote it


class ScorerSource(StrEnum):
    """Where the chosen scorer came from."""

    NO_EMBEDDINGS = "no embeddings"
    NONE = "none"
    DEFAULT = "default"
    FILE = "file"
    APPLIED = "applied"
    EXAM_FILE = "exam file"


@dataclass(frozen=True)
class ScorerChoice:
    """The scorer (None: the judge decides) and where it came from, for messages."""

    scorer: ScorerSet | None
    source: ScorerSource
    path: Path | None = None  # the file it was read from, for FILE and EXAM_FILE

    @property
    def label(self) -> str:
        """``file <path>``, ``exam file <path>``, ``applied on the pages``, ``default``, …"""
        if self.path is not None:
            return f"{self.source} {self.path}"
        if self.source is ScorerSource.APPLIED:
            return "applied on the instructor pages"
        return str(self.source)


def choose_scorer(
    setting: ScorerSetting | None,
    bank_path: Path | None = None,
    *,
    embeddings: bool = True,
    applied: AppliedScorer | None = None,
) -> ScorerChoice:
    """The scorer for an exam, in the order of this module's docstring: none without
    ``embeddings``, else ``setting`` when given, else ``applied``, else the exam's file
    (``bank_path``'s ``scorer.json``), else the shipped default. Only the deciding source is
    read.

    A file that is wrong (unreadable, edited by hand, another schema) is a ``ConfigError``
    naming it, never a silent fall-back to another scorer.
    """
    if not embeddings:
        return ScorerChoice(None, ScorerSource.NO_EMBEDDINGS)
    if setting is not None:
        if setting.kind is ScorerKind.NONE:
            return ScorerChoice(None, ScorerSource.NONE)
        if setting.kind is ScorerKind.DEFAULT:
            return ScorerChoice(_read(DEFAULT_FILE), ScorerSource.DEFAULT)
        assert setting.path is not None
        return ScorerChoice(_read(setting.path), ScorerSource.FILE, setting.path)
    if applied is not None:
        scorer = from_json(applied.text, f"the scorer applied to {applied.exam}")
        return ScorerChoice(scorer, ScorerSource.APPLIED)
    if bank_path is not None:
        own = exam_scorer_path(bank_path)
        if own.is_file():
            return ScorerChoice(_read(own), ScorerSource.EXAM_FILE, own)
    return ScorerChoice(_read(DEFAULT_FILE), ScorerSource.DEFAULT)


def _read(path: Path) -> ScorerSet:
    """A scorer file, by its path (never the words ``default``/``none``)."""
    scorer = load_scorer(path)
    assert scorer is not None  # only the word "none" is no scorer
    return scorer
