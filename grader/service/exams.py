"""The exams a grading service serves: one per bank file, named by the bank's name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from grader.bank.files import load_bank
from grader.config import Settings
from grader.embed import Embedder, make_embedder
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.engine.scoring.scorer_choice import (
    AppliedScorer,
    ScorerChoice,
    choose_scorer,
    scorer_setting,
)
from grader.engine.scoring.scorer_model import ScorerSet
from grader.errors import ConfigError
from grader.judge import Judge, LazyJudge, make_judge
from grader.models import Bank, Rubric


@dataclass
class Exam:
    bank: Bank
    rubrics: dict[str, Rubric]  # the one dict its pipeline reads: changed in place
    path: Path
    rubrics_seen: int = 0  # the newest rubric version read from the store (``rubric_versions``)

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
    # by exam and the version applied on the pages (None: none applied)
    _chosen: dict[tuple[str, str | None], ScorerChoice] = field(default_factory=dict)

    @classmethod
    def load(
        cls, settings: Settings, build_judge: Callable[[], Judge | None] | None = None
    ) -> Graders:
        """The exams, the judge and the embedder. With ``build_judge`` the judge is built by it
        when the first answer needs it (``LazyJudge``), not now."""
        judge: Judge | None
        if build_judge is None:
            judge = make_judge(settings)
        elif settings.judge.backend == "none":
            judge = None
        else:
            judge = LazyJudge(lambda: _built(build_judge()))
        return cls(load_exams(settings.service.banks), settings, judge, make_embedder(settings))

    def pipeline(self, exam: str) -> Pipeline:
        if exam not in self._pipelines:
            e = self.exams[exam]
            self._pipelines[exam] = Pipeline(
                e.bank, e.rubrics, self.judge, self.settings, self.embedder,
                scorer=self._choice(exam, None),
            )  # fmt: skip
        return self._pipelines[exam]

    def scorer(self, exam: str, applied: AppliedScorer | None) -> ScorerSet | None:
        """The scorer that grades ``exam`` now (``choose_scorer``); ``applied``: the one an
        instructor applied on the pages, read from the store once per task."""
        return self._choice(exam, applied).scorer

    def _choice(self, exam: str, applied: AppliedScorer | None) -> ScorerChoice:
        """Chosen once per exam and applied version: files are read once per process."""
        key = (exam, applied.version if applied is not None else None)
        if key not in self._chosen:
            self._chosen[key] = choose_scorer(
                scorer_setting(self.settings.scorer.choice),
                self.exams[exam].path,
                embeddings=self.embedder is not None,
                applied=applied,
            )
        return self._chosen[key]

    def close(self) -> None:
        if self.judge is not None:
            self.judge.close()


def _built(judge: Judge | None) -> Judge:
    if judge is None:
        raise ConfigError("GRADER_JUDGE is none: there is no judge to build")
    return judge
