"""``grader grade``: a submissions file into a grades file, resumably, with a summary.

The run is quiet by default: the libraries' output goes to a log file (``quiet``) and one
display (``display``) shows the steps of the run (``grading_run``). A run that leaves answers
unscored says why and exits ``EXIT_UNSCORED``, so a script or a scheduler sees the failure; a
rerun grades those answers again, and the grades file keeps one record per answer.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from grader.cli.app import app, console, err, fail
from grader.cli.display import ProgressMode, make_display
from grader.cli.grading_run import CLI_JUDGE_CHUNK, GradingRun, unscored_cause
from grader.cli.quiet import libraries_to, log_path
from grader.errors import GraderError

# The exit status of a run that finished but left answers unscored (the judge failed on them):
# 2 stays a usage or input error, before anything is graded.
EXIT_UNSCORED = 3

JudgeChunkOption = Annotated[
    int | None,
    typer.Option(
        min=0,
        help="Judge requests per call; the progress moves as each call finishes. "
        f"Default: GRADER_JUDGE_CHUNK or {CLI_JUDGE_CHUNK}; 0: a whole batch per call.",
    ),
]

VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="The libraries' own output (vLLM, transformers, torch) on the terminal, "
        "instead of a log file under the cache folder.",
    ),
]

ProgressOption = Annotated[
    ProgressMode,
    typer.Option(
        help="auto: live on a terminal, a line per step and advance otherwise (and with "
        "-v); rich; plain."
    ),
]

ScorerOption = Annotated[
    str | None,
    typer.Option(
        help="The calibrated scorer: 'default' (shipped), a scorer file (`grader calibrate "
        "fit`), or 'none' (the judge's points stand). Default: GRADER_SCORER, else the "
        "exam's scorer.json beside its rubrics, else the shipped one."
    ),
]

OutOption = Annotated[
    Path,
    typer.Option(
        "--out",
        "-o",
        help="Grades JSONL: appended as graded, one record per answer at the end; a rerun "
        "skips graded answers and grades unscored ones again.",
    ),
]

GradedOption = Annotated[
    Path | None,
    typer.Option(
        help="Your scored answers (the calibration CSV: submission_id, question_id, score): "
        "the scorer leans on the nearest of them; texts from the submissions file."
    ),
]


@app.command()
def grade(
    submissions: Annotated[
        Path, typer.Argument(help="JSONL: {id, question_id | question, answer, student?} per line.")
    ],
    bank_path: Annotated[
        Path, typer.Option("--bank", "-b", help="Bank YAML the submissions answer.")
    ],
    out: OutOption,
    judge: Annotated[
        str | None,
        typer.Option(
            help="Judge backend: vllm (embedded default), openai, scripted, none. "
            "Default: GRADER_JUDGE or vllm."
        ),
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Submissions per grading batch.")] = 64,
    embed_model: Annotated[
        str | None,
        typer.Option(
            help="Answer embeddings for off-topic, duplicate, coverage and group signals: "
            "a packaged model, a sentence-transformers folder, or 'none'. "
            "Default: GRADER_EMBED_MODEL or multilingual-e5-small."
        ),
    ] = None,
    judge_chunk: JudgeChunkOption = None,
    verbose: VerboseOption = False,
    progress: ProgressOption = ProgressMode.AUTO,
    scorer: ScorerOption = None,
    graded: GradedOption = None,
) -> None:
    """Grade a submissions file into a grades file, resumably, with a summary at the end.

    Objective questions are graded exactly; the embedding model is loaded only when there are
    subjective answers to grade, the judge only when the first answer needs it (under the
    judge's budget a Chinese exam may ask it nothing). Blank and off-topic answers score 0 without
    the judge; off-topic ones go to review, near-duplicates to `grader integrity`; review is
    ranked by expected error, at most GRADER_REVIEW_SHARE of each question plus hard reasons.
    Exits 3 when answers are left unscored (the judge failed on them): run the command again
    to grade them.
    """
    from grader.files.grades import read_grades

    options = {"backend": judge, "chunk": judge_chunk, "embed_model": embed_model, "scorer": scorer}
    bank, rubrics, settings, pending, done = _load(bank_path, submissions, out, options)
    scored = _graded(graded, bank, rubrics, pending) if graded else []
    todo = [s for s in pending if s.id not in done]
    if done:
        console.print(
            f"{len(pending) - len(todo)} of {len(pending)} already graded in "
            f"{escape(str(out))}, skipping them"
        )
    objective = [s for s in todo if bank.get(s.question_id).type.objective]
    # Grouped by question, so each batch's answers share rubric prefixes.
    subjective = sorted(
        (s for s in todo if not bank.get(s.question_id).type.objective),
        key=lambda s: s.question_id,
    )
    # Off-topic, duplicate and group signals compare each answer with the whole file's
    # answers to its question, graded before or not.
    cohort = [s for s in pending if not bank.get(s.question_id).type.objective]
    run = GradingRun(
        out, bank, rubrics, settings, cohort, batch_size, _scorer(settings, bank_path), scored
    )
    _grade_all(run, objective, subjective, progress, verbose)
    ids = {s.id for s in pending}
    grades = [g for g in read_grades(out) if g.submission_id in ids]
    _summary(grades)
    _fail_if_unscored(grades, run.trouble)


def _grade_all(run: GradingRun, objective: list, subjective: list, progress, verbose: bool) -> None:
    """The run's answers graded on one display, the grades file left with one record per
    answer however the run ends (a rerun's records supersede the unscored ones)."""
    from grader.files.grades import compact_grades

    # The libraries are loaded only for subjective answers: only then is there a log to keep.
    log = _log_file(run.settings) if subjective and not verbose else None
    try:
        with (
            libraries_to(log, (console, err)),
            make_display(progress, err, verbose) as display,
        ):
            if log is not None:
                display.note(f"library logs: {escape(str(log))}")
            run.objective(objective, display)
            if subjective:
                run.subjective(subjective, display, log)
    finally:
        compact_grades(run.out)


def _fail_if_unscored(grades: list, trouble: str | None) -> None:
    """Exit ``EXIT_UNSCORED`` naming the cause when answers have no score because the judge
    failed on them (this run's first cause, else the first such grade's)."""
    from grader.models import GradeStatus

    unscored = sum(g.status is GradeStatus.UNSCORED for g in grades)
    if not unscored:
        return
    cause = trouble or unscored_cause(grades)
    err.print(
        f"[bold red]error:[/] {unscored} of {len(grades)} answers left unscored: "
        f"{escape((cause or 'see review_reasons').rstrip('.'))}. Run the same command again to grade them "
        f"(exit status {EXIT_UNSCORED}).",
        highlight=False,
    )
    raise typer.Exit(code=EXIT_UNSCORED)


def _load(bank_path: Path, submissions: Path, out: Path, options: dict):
    """Settings, bank, rubrics and submissions, and the ids already graded in ``out``."""
    from grader.bank.files import load_bank
    from grader.config import EmbeddingSettings, JudgeSettings, ScorerSettings, Settings
    from grader.engine.reading.rubrics import load_rubrics
    from grader.files.grades import read_grades
    from grader.files.submissions import read_submissions
    from grader.models import GradeStatus

    try:
        given = {k: v for k, v in options.items() if v is not None}
        judge = JudgeSettings(**{k: given[k] for k in ("backend", "chunk") if k in given})
        if judge.chunk is None:  # the service's default is one call per batch
            judge = judge.model_copy(update={"chunk": CLI_JUDGE_CHUNK})
        settings = Settings(
            judge=judge,
            embeddings=EmbeddingSettings(
                **{"model": given["embed_model"]} if "embed_model" in given else {}
            ),
            scorer=ScorerSettings(**{"choice": given["scorer"]} if "scorer" in given else {}),
        )
        bank = load_bank(bank_path)
        rubrics = load_rubrics(bank_path, bank)
        pending = read_submissions(submissions, bank)
        # An answer left unscored (the judge failed on it) is graded again.
        done = {g.submission_id for g in read_grades(out) if g.status is not GradeStatus.UNSCORED}
    except GraderError as exc:
        raise fail(exc) from exc
    except ValueError as exc:  # settings validation
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(code=2) from exc
    return bank, rubrics, settings, pending, done


def _log_file(settings) -> Path | None:
    try:
        return log_path(settings.cache.dir, "grade")
    except OSError as exc:
        err.print(
            f"[yellow]warning:[/] cannot keep a log in {escape(str(settings.cache.dir))} "
            f"({escape(str(exc))}): the libraries' output stays on the terminal"
        )
        return None


def _scorer(settings, bank_path: Path):
    """The run's scorer (``choose_scorer``), chosen before any model loads so that a broken
    scorer file stops the run at once."""
    from grader.engine.scoring.scorer_choice import ScorerSource, choose_scorer, scorer_setting

    try:
        chosen = choose_scorer(
            scorer_setting(settings.scorer.choice),
            bank_path,
            embeddings=settings.embeddings.model != "none",  # as ``make_embedder`` decides
        )
    except GraderError as exc:
        raise fail(exc) from exc
    if chosen.scorer is not None and chosen.source is not ScorerSource.DEFAULT:
        err.print(escape(f"scorer: {chosen.label} (version {chosen.scorer.version})"))
    return chosen


def _graded(path: Path, bank, rubrics, pending: list) -> list:
    """The instructor's scored answers (--graded), texts from the submissions file."""
    from grader.calibrate import question_scales, read_human_scores
    from grader.calibrate.graded import graded_answers

    try:
        humans = read_human_scores(path)
        found = graded_answers(
            humans, {s.id: s for s in pending}, question_scales(bank, rubrics), path
        )
    except GraderError as exc:
        raise fail(exc) from exc
    err.print(f"{len(found)} answer(s) you scored: the scorer leans on the nearest of them")
    return found


def _summary(grades: list) -> None:
    by_question: dict[str, list] = defaultdict(list)
    by_student: dict[str, list] = defaultdict(list)
    for g in grades:
        by_question[g.question_id].append(g)
        by_student[g.student or "(anonymous)"].append(g)

    table = Table(title="per question")
    for column in ("question", "answers", "graded", "mean", "max", "not graded", "review"):
        table.add_column(column, justify="right" if column != "question" else "left")
    for qid, items in by_question.items():
        scored = [g for g in items if g.score is not None]
        mean = sum(g.score for g in scored) / len(scored) if scored else None
        table.add_row(
            escape(qid),
            str(len(items)),
            str(len(scored)),
            "" if mean is None else f"{mean:.2f}",
            "" if items[0].max_score is None else f"{items[0].max_score:g}",
            str(len(items) - len(scored)),
            str(sum(g.needs_review for g in items)),
        )
    console.print(table)

    table = Table(title="per student")
    for column in ("student", "answers", "score", "of", "not graded"):
        table.add_column(column, justify="right" if column != "student" else "left")
    for student, items in sorted(by_student.items()):
        scored = [g for g in items if g.score is not None]
        table.add_row(
            escape(student),
            str(len(items)),
            f"{sum(g.score for g in scored):g}",
            f"{sum(g.max_score or 0 for g in scored):g}",
            str(len(items) - len(scored)),
        )
    console.print(table)
    from grader.engine.review.queue import queue_order, recorded_error

    flagged = queue_order(grades)  # hard reasons first, then the largest expected error
    if flagged:
        table = Table(title=f"review queue ({len(flagged)}; first 10, in ranked order)")
        for column in ("submission", "score", "expected error", "why"):
            table.add_column(column, overflow="fold")
        for g in flagged[:10]:
            score = "—" if g.score is None else f"{g.score:g}/{g.max_score:g}"
            error = recorded_error(g)
            why = "; ".join(r.message for r in g.review_reasons)[:160]
            table.add_row(
                escape(g.submission_id), score, "" if error is None else f"{error:g}", escape(why)
            )
        console.print(table)
    statuses: dict[str, int] = defaultdict(int)
    for g in grades:
        statuses[g.status.value] += 1
    console.print("status: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())))
    derived = sorted({g.question_id for g in grades if g.provenance.rubric_reviewed is False})
    if derived:
        console.print(
            f"[yellow]{len(derived)} question(s) graded against a rubric no instructor has "
            f"reviewed (derived from the reference answer): review these rubrics[/] "
            f"(`grader rubric check`): {escape(', '.join(derived))}",
            markup=True,
        )
