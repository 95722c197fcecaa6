"""The exams a grading service serves: one per bank file, named by the bank's name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from grader.bank.files import load_bank
from grader.config import Settings
from grader.embed import Embedder, make_embedder
from grader.engine.pipeline import Pipeline
from grader.engine.rubrics import load_rubrics
from grader.engine.scorer import ScorerSet, from_json
from grader.engine.scorer_choice import choose_scorer
from grader.errors import ConfigError
from grader.judge import Judge, make_judge
from grader.models import Bank, Rubric


@dataclass
class Exam:
    bank: Bank
    rubrics: dict[str, Rubric]
    path: Path

    @property
    def name(self) -> str:
        return self.bank.name


def load_exams(paths: Sequence[Path]) -> dict[str, Exam]:
    """Every bank with its rubrics, by name; two banks with one name are a configuration error."""
    exams: dict[str, Exam] = {}
    for path in paths:
        bank = load_bank(Path(path))
        if bank.name in exams:
            raise ConfigError(
                f"{path}: bank name {bank.name!r} also used by {exams[bank.name].path}"
            )
        exams[bank.name] = Exam(bank, load_rubrics(Path(path), bank), Path(path))
    if not exams:
        raise ConfigError("no banks to serve: set GRADER_BANKS to a list of bank files")
    return exams


@dataclass
class Graders:
    """One judge and one embedder per process, and a pipeline per exam sharing them: built
    once, after fork (the embedding model loads on first use, only if an answer needs it)."""

    exams: dict[str, Exam]
    settings: Settings
    judge: Judge | None = None
    embedder: Embedder | None = None
    _pipelines: dict[str, Pipeline] = field(default_factory=dict)
    _applied: dict[str, ScorerSet] = field(default_factory=dict)  # by version

    @classmethod
    def load(cls, settings: Settings) -> Graders:
        return cls(
            load_exams(settings.banks), settings, make_judge(settings), make_embedder(settings)
        )

    def pipeline(self, exam: str) -> Pipeline:
        if exam not in self._pipelines:
            e = self.exams[exam]
            # GRADER_SCORER, else the exam's scorer.json, else the shipped default
            chosen = choose_scorer(self.settings.scorer, e.path) if self.embedder else None
            self._pipelines[exam] = Pipeline(
                e.bank, e.rubrics, self.judge, self.settings, self.embedder,
                scorer=chosen.scorer if chosen else None,
            )  # fmt: skip
        return self._pipelines[exam]

    def scorer(self, exam: str, applied: tuple[str, str] | None) -> ScorerSet | None:
        """The scorer that grades ``exam`` now: GRADER_SCORER when set, else the scorer an
        instructor applied on the pages (``applied``: its version and file text, read from
        the store once per task), else the pipeline's (the exam's file or the default)."""
        pipeline = self.pipeline(exam)
        if self.settings.scorer is not None or applied is None or pipeline.scorer is None:
            return pipeline.scorer
        version, text = applied
        if version not in self._applied:
            self._applied[version] = from_json(text, f"the scorer applied to {exam}")
        return self._applied[version]

    def close(self) -> None:
        if self.judge is not None:
            self.judge.close()
