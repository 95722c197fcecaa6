"""The steps of a ``grader grade`` run, each on the display: the objective answers; the models
prepared (only the first time on a machine) and loaded; then the subjective answers in
batches, their signals and their judging counted from the engine's progress events. The
judge is prepared and loaded when the first answer needs it (``LazyJudge``): under the
judge's budget a Chinese exam may never ask it anything, and then never waits for it.

Trouble the user must know about — a model that cannot load, a judge that stops answering —
is one line on the terminal that names the log; the libraries' own account is in the log.
Answers the judge could not score turn the judging counter red, and the run keeps the cause
(``GradingRun.trouble``) for the error ``grader grade`` ends with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from grader.cli.display import Display
from grader.engine.judging.progress import Progress, Stage
from grader.errors import GraderError

if TYPE_CHECKING:  # the command line starts fast: the engine is imported when a run needs it
    from grader.config import Settings
    from grader.engine.pipeline import Pipeline
    from grader.engine.scoring.scorer_choice import ScorerChoice
    from grader.judge import Judge
    from grader.models import Bank, Grade, GradedAnswer, Rubric, Submission

# Judge requests per call in the command line: about a dozen answers' checks in the
# probability mode, so the display moves every few answers; see docs/research/benchmarks-log.md for
# what it costs against one call per batch.
CLI_JUDGE_CHUNK = 16


class GradingRun:
    """One ``grader grade`` run's grading: what every step needs, and the steps."""

    def __init__(
        self,
        out: Path,
        bank: Bank,
        rubrics: dict[str, Rubric],
        settings: Settings,
        cohort: Sequence[Submission],
        batch_size: int,
        scorer: ScorerChoice | None = None,
        graded: Sequence[GradedAnswer] = (),
    ):
        self.out, self.bank, self.rubrics, self.settings = out, bank, rubrics, settings
        self.cohort, self.batch_size = list(cohort), batch_size
        # ``scorer``: chosen for this run (``choose_scorer``); None: from the settings.
        self.scorer, self.graded = scorer, list(graded)
        self.trouble: str | None = None  # why the judge left answers unscored, first seen

    def objective(self, items: list[Submission], display: Display) -> None:
        """Graded exactly, without a model: instant, and kept even if a model fails later."""
        if not items:
            return
        from grader.engine.pipeline import Pipeline

        counter = display.counter("objective answers", len(items), "answers")
        pipeline = Pipeline(self.bank, self.rubrics, None, self.settings)
        self._batches(pipeline, items, lambda _stage, n: counter.advance(n))

    def subjective(self, items: list[Submission], display: Display, log: Path | None) -> None:
        """The embedding model loaded, then the answers in batches; the judge loaded on its
        first request, and closed however the run ends."""
        try:
            embedder = self._embedder(display)
        except GraderError as exc:
            display.note(_error_line(exc, log))
            raise typer.Exit(code=2) from exc
        from grader.engine.pipeline import Pipeline
        from grader.judge import LazyJudge

        judged = self.settings.judge.backend != "none"
        counters = _SubjectiveCounters(display, len(items), embedder is not None, judged)
        judge = LazyJudge(lambda: self._judge(display, log, counters)) if judged else None
        try:
            pipeline = Pipeline(
                self.bank, self.rubrics, judge, self.settings, embedder, scorer=self.scorer
            )
            self._batches(
                pipeline,
                items,
                counters.on,
                lambda g: self._judge_trouble(display, counters, g, log),
            )
        finally:
            if judge is not None:
                judge.close()

    def _batches(
        self,
        pipeline: Pipeline,
        items: list[Submission],
        progress: Progress,
        check: Callable[[list[Grade]], None] | None = None,
    ) -> None:
        """``items`` graded ``batch_size`` at a time, each batch's grades appended (and
        flushed) to the output as soon as they are made."""
        from grader.files.grades import GradeWriter

        with GradeWriter(self.out) as writer:
            for start in range(0, len(items), self.batch_size):
                batch = items[start : start + self.batch_size]
                grades = pipeline.grade_many(batch, self.cohort, self.graded, progress=progress)
                writer.write(grades)
                if check is not None:
                    check(grades)

    def _judge_trouble(
        self, display: Display, counters: _SubjectiveCounters, grades: list[Grade], log
    ) -> None:
        """A red line when the judge left answers of a batch unscored (killed for memory, a
        dead engine, an unreachable server), the judging counter red; the cause kept."""
        from grader.models import GradeStatus

        failed = sum(g.status is GradeStatus.UNSCORED for g in grades)
        if not failed:
            return
        counters.fail(failed)
        cause = unscored_cause(grades) or ""
        self.trouble = self.trouble or cause
        display.note(
            f"[bold red]error:[/] the judge could not score {failed} answer(s): "
            f"{escape(cause)} — left unscored; run the same command again to grade them"
            f"{escape(_log_hint(log))}"
        )

    def _embedder(self, display: Display):
        from grader.embed import make_embedder
        from grader.packaged import awaits_preparation, prepare_embed_model

        name, cache = self.settings.embeddings.model, self.settings.cache.dir.expanduser()
        if name == "none":
            return None
        if awaits_preparation(name, cache / "embed"):
            with display.step(f"preparing the embedding model {name} (once per machine)") as step:
                prepare_embed_model(name, cache / "embed", progress=step.say)
        with display.step(f"loading the embedding model ({name})"):
            embedder = make_embedder(self.settings)
            if embedder is not None:
                embedder.load()
        return embedder

    def _judge(self, display: Display, log: Path | None, counters: _SubjectiveCounters) -> Judge:
        """The configured judge, prepared and loaded on the display, called on its first
        request; one that cannot load ends the run (exit 2), the grades written so far kept."""
        from grader.judge import make_judge
        from grader.packaged import awaits_preparation, prepare_model

        backend, name = self.settings.judge.backend, self.settings.judge.model
        cache = self.settings.cache.dir.expanduser() / "models"
        what = (
            f"loading the judge ({name})" if backend == "vllm" else f"starting the {backend} judge"
        )
        try:
            if backend == "vllm" and awaits_preparation(name, cache):
                with display.step(
                    f"preparing the judge model {name} (once per machine, a few minutes)"
                ) as step:
                    prepare_model(name, cache, progress=step.say)
            with display.step(what):
                judge = make_judge(self.settings)
        except GraderError as exc:
            display.note(_error_line(exc, log))
            raise typer.Exit(code=2) from exc
        assert judge is not None  # backend "none" gets no LazyJudge
        counters.judge_loaded()
        return judge


class _SubjectiveCounters:
    """The engine's events as two counters: signals (answers scored by rule need none) and
    judging (every answer ends there, judged or not). The judging counter starts when the
    signals are done (or the judge reports first), so its estimate leaves their time out."""

    def __init__(self, display: Display, total: int, signals: bool, judge: bool):
        self.display, self.total, self.judge = display, total, judge
        self.signals = display.counter("embedding signals", total, "answers") if signals else None
        self.embedded = 0
        self.judging = None if signals else self._judging()
        self.waiting = 0  # answers ruled on before the judging counter exists

    def _judging(self):
        what = "judging" if self.judge else "subjective answers (no judge)"
        return self.display.counter(what, self.total, "answers")

    def on(self, stage: Stage, n: int) -> None:
        if self.signals is not None and stage in (Stage.RULED, Stage.EMBEDDED):
            self.signals.advance(n)
            self.embedded += n
        if stage != Stage.EMBEDDED:
            self.waiting += n
        started = stage in (Stage.SET_ASIDE, Stage.JUDGED) or self.embedded >= self.total
        if self.judging is None and started:
            self.judging = self._judging()
        if self.judging is not None and self.waiting:
            self.judging.advance(self.waiting)
            self.waiting = 0

    def judge_loaded(self) -> None:
        """The judge loaded inside its first request: the judging counter's clock starts
        again, so its time and estimate leave the load out (the load's own step shows it)."""
        if self.judging is not None:
            self.judging.restart()

    def fail(self, n: int) -> None:
        """``n`` answers of the batch just reported were left unscored."""
        if self.judging is None:  # every answer of a batch has ended by now
            self.judging = self._judging()
        self.judging.fail(n)


def unscored_cause(grades: Sequence[Grade]) -> str | None:
    """The first line of why the first unscored grade has no score (the judge's error: a
    killed worker, an unreachable server, no valid verdict), or None when all have one."""
    from grader.models import GradeStatus, ReviewCode

    judge = (ReviewCode.JUDGE_UNAVAILABLE, ReviewCode.JUDGE_FAILED)
    for grade in grades:
        if grade.status is GradeStatus.UNSCORED:
            reasons = sorted(grade.review_reasons, key=lambda r: r.code not in judge)
            return _first_line(reasons[0].message) if reasons else "no reason recorded"
    return None


def _error_line(exc: Exception, log: Path | None) -> str:
    return f"[bold red]error:[/] {escape(_first_line(str(exc)))}{escape(_log_hint(log))}"


def _first_line(text: str, limit: int = 240) -> str:
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _log_hint(log: Path | None) -> str:
    return f" (the libraries' log: {log})" if log is not None else ""
