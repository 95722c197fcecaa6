"""The ``grader`` command line: import papers, inspect banks, grade submissions files."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from grader.errors import GraderError

app = typer.Typer(
    help="Grade exam answers: objective questions exactly, essays against rubrics.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
bank_app = typer.Typer(
    help="Import exam papers into question banks and inspect them.", no_args_is_help=True
)
app.add_typer(bank_app, name="bank")
rubric_app = typer.Typer(help="Check rubric files and draft new ones.", no_args_is_help=True)
app.add_typer(rubric_app, name="rubric")

console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _fail(exc: GraderError) -> typer.Exit:
    err.print(f"[bold red]error:[/] {exc}")
    return typer.Exit(code=2)


@bank_app.command("import")
def bank_import(
    papers: Annotated[list[Path], typer.Argument(help="Exam paper text files (UTF-8 or GB18030).")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Bank YAML to write, e.g. rubrics/NAME.yaml.")
    ],
    name: Annotated[
        str | None, typer.Option(help="Bank name (default: the output file's stem).")
    ] = None,
    strict: Annotated[
        bool, typer.Option(help="Fail on any warning instead of listing it.")
    ] = False,
) -> None:
    """Read exam papers (sections, questions, options, answers, explanations) into a bank."""
    from grader.bank.files import import_papers, save_bank

    try:
        bank, warnings = import_papers(papers, name or out.stem)
    except GraderError as exc:
        raise _fail(exc) from exc
    for warning in warnings:
        err.print(f"[yellow]warning:[/] {warning}")
    if strict and warnings:
        err.print(f"[bold red]error:[/] {len(warnings)} warning(s) and --strict: nothing written")
        raise typer.Exit(code=1)
    save_bank(bank, out)
    counts: dict[str, int] = defaultdict(int)
    for q in bank.questions:
        counts[q.type.value] += 1
    summary = ", ".join(f"{n} {t}" for t, n in counts.items())
    console.print(
        f"wrote {out}: {len(bank.questions)} questions ({summary}), {len(warnings)} warning(s)"
    )


@bank_app.command("show")
def bank_show(
    bank_path: Annotated[Path, typer.Argument(metavar="BANK", help="Bank YAML file.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the questions as a JSON list.")
    ] = False,
) -> None:
    """Show a bank's questions as a table, or as JSON for other tools."""
    from grader.bank.files import load_bank

    try:
        bank = load_bank(bank_path)
    except GraderError as exc:
        raise _fail(exc) from exc
    if as_json:
        print(
            json.dumps(
                [q.model_dump(mode="json") for q in bank.questions], ensure_ascii=False, indent=1
            )
        )
        return
    table = Table(title=f"{bank.name} — {len(bank.questions)} questions", show_lines=False)
    for column in ("id", "no.", "type", "pts", "stem", "answer"):
        table.add_column(column, overflow="fold" if column == "stem" else "ellipsis")
    for q in bank.questions:
        answer = q.answer if not isinstance(q.answer, bool) else ("√" if q.answer else "×")
        flag = " [red](incomplete)[/]" if q.incomplete else ""
        table.add_row(
            q.id,
            q.number,
            q.type.value,
            "" if q.points is None else f"{q.points:g}",
            q.stem[:80] + ("…" if len(q.stem) > 80 else ""),
            ("" if answer is None else str(answer)[:30]) + flag,
        )
    console.print(table)


@app.command()
def grade(
    submissions: Annotated[
        Path, typer.Argument(help="JSONL: {id, question_id | question, answer, student?} per line.")
    ],
    bank_path: Annotated[
        Path, typer.Option("--bank", "-b", help="Bank YAML the submissions answer.")
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Grades JSONL (appended; reruns skip graded ids).")
    ],
    judge: Annotated[
        str | None,
        typer.Option(
            help="Judge backend: vllm (embedded default), openai, scripted, none. "
            "Default: GRADER_JUDGE or vllm."
        ),
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Submissions per grading batch.")] = 64,
) -> None:
    """Grade a submissions file into a grades file, resumably, with a summary at the end.

    Objective questions are graded exactly; the judge is loaded only when there are
    subjective answers to grade.
    """
    from grader.bank.files import load_bank
    from grader.config import Settings
    from grader.gradebook import GradeWriter, read_grades
    from grader.judge import make_judge
    from grader.pipeline import Pipeline
    from grader.rubrics import load_rubrics
    from grader.submissions import read_submissions

    try:
        settings = Settings(**({"judge": judge} if judge else {}))
        bank = load_bank(bank_path)
        rubrics = load_rubrics(bank_path, bank)
        pending = read_submissions(submissions, bank)
        # A grade left unscored because the judge was unreachable is tried again.
        done = {g.submission_id for g in read_grades(out) if not _retryable(g)}
    except GraderError as exc:
        raise _fail(exc) from exc
    except ValueError as exc:  # settings validation
        err.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(code=2) from exc
    todo = [s for s in pending if s.id not in done]
    if done:
        console.print(
            f"{len(pending) - len(todo)} of {len(pending)} already graded in {out}, skipping them"
        )
    subjective = [s for s in todo if not bank.get(s.question_id).type.objective]
    try:
        if subjective and settings.judge != "none":
            err.print(
                f"loading the {settings.judge} judge ({settings.judge_model}) "
                f"for {len(subjective)} subjective answer(s)…"
            )
        judge_backend = make_judge(settings) if subjective else None
    except GraderError as exc:
        raise _fail(exc) from exc
    pipeline = Pipeline(bank, rubrics, judge_backend, settings)
    try:
        with (
            GradeWriter(out) as writer,
            Progress(
                TextColumn("grading"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=err,
            ) as progress,
        ):
            task = progress.add_task("grading", total=len(todo))
            # Objective answers first (instant), then the judge's work in batches.
            ordered = [s for s in todo if s not in subjective] + subjective
            for start in range(0, len(ordered), batch_size):
                batch = ordered[start : start + batch_size]
                writer.write(pipeline.grade_many(batch))
                progress.advance(task, len(batch))
    finally:
        if judge_backend is not None:
            judge_backend.close()
    _summary(read_grades(out), {s.id for s in pending})


@rubric_app.command("check")
def rubric_check(
    banks: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[BANK]...", help="Bank YAML files (default: every rubrics/*.yaml)."
        ),
    ] = None,
) -> None:
    """Validate every rubric file of the banks, and list subjective questions without one."""
    from grader.bank.files import load_bank
    from grader.rubrics import load_rubric, rubric_dir

    paths = banks or sorted(Path("rubrics").glob("*.yaml"))
    if not paths:
        err.print("[bold red]error:[/] no bank files given and none in rubrics/")
        raise typer.Exit(code=2)
    failures = 0
    table = Table(title="rubrics")
    for column in ("question", "type", "points", "rubric", "version"):
        table.add_column(column)
    for bank_path in paths:
        try:
            bank = load_bank(bank_path)
        except GraderError as exc:
            raise _fail(exc) from exc
        folder = rubric_dir(bank_path)
        files = {p.stem: p for p in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}
        for stem in sorted(files.keys() - {q.id for q in bank.questions}):
            failures += 1
            err.print(f"[red]invalid:[/] {files[stem]}: no question {stem!r} in {bank_path}")
        for q in bank.questions:
            if q.type.objective:
                continue
            if q.id not in files:
                table.add_row(
                    q.id, q.type.value, f"{q.points or ''}", "[yellow]none: derived[/]", ""
                )
                continue
            try:
                rubric = load_rubric(files[q.id], bank)
            except GraderError as exc:
                failures += 1
                err.print(f"[red]invalid:[/] {exc}")
                table.add_row(q.id, q.type.value, f"{q.points or ''}", "[red]invalid[/]", "")
                continue
            state = "ok" if rubric.reviewed else "[yellow]ok, unreviewed[/]"
            table.add_row(q.id, q.type.value, f"{rubric.points:g}", state, rubric.version)
    console.print(table)
    if failures:
        raise typer.Exit(code=1)


@rubric_app.command("draft")
def rubric_draft(
    bank_path: Annotated[Path, typer.Argument(metavar="BANK", help="Bank YAML file.")],
    question_id: Annotated[str, typer.Argument(help="Question to draft a rubric for.")],
    judge: Annotated[
        str | None, typer.Option(help="Judge backend (default: GRADER_JUDGE or vllm).")
    ] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing rubric file.")] = False,
) -> None:
    """Draft a rubric from the question's reference answer with the judge, for you to edit."""
    from grader.bank.files import load_bank
    from grader.config import Settings
    from grader.draft import draft_rubric
    from grader.judge import make_judge
    from grader.rubrics import rubric_dir, save_rubric

    try:
        settings = Settings(**({"judge": judge} if judge else {}))
        bank = load_bank(bank_path)
    except GraderError as exc:
        raise _fail(exc) from exc
    question = bank.get(question_id)
    if question is None or question.type.objective:
        err.print(
            f"[bold red]error:[/] {question_id!r} is not a subjective question of {bank_path}"
        )
        raise typer.Exit(code=2)
    target = rubric_dir(bank_path) / f"{question_id}.yaml"
    if target.exists() and not force:
        err.print(f"[bold red]error:[/] {target} exists; use --force to overwrite")
        raise typer.Exit(code=2)
    backend = make_judge(settings)
    if backend is None:
        err.print("[bold red]error:[/] drafting needs a judge; GRADER_JUDGE is 'none'")
        raise typer.Exit(code=2)
    try:
        rubric = draft_rubric(question, backend)
    except GraderError as exc:
        raise _fail(exc) from exc
    finally:
        backend.close()
    path = save_rubric(rubric, rubric_dir(bank_path))
    console.print(
        f"wrote {path} ({len(rubric.criteria)} criteria, reviewed: false) — edit it, "
        "then run `grader rubric check`"
    )


def _retryable(grade) -> bool:
    return any(r.code == "judge_unavailable" for r in grade.review_reasons)


def _summary(grades: list, submission_ids: set[str]) -> None:
    latest = {g.submission_id: g for g in grades if g.submission_id in submission_ids}
    grades = list(latest.values())  # a retried submission: its last record counts
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
            qid,
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
            student,
            str(len(items)),
            f"{sum(g.score for g in scored):g}",
            f"{sum(g.max_score or 0 for g in scored):g}",
            str(len(items) - len(scored)),
        )
    console.print(table)
    flagged = [g for g in grades if g.needs_review]
    if flagged:
        table = Table(title=f"needs review ({len(flagged)}; first 10)")
        for column in ("submission", "score", "why"):
            table.add_column(column, overflow="fold")
        for g in flagged[:10]:
            score = "—" if g.score is None else f"{g.score:g}/{g.max_score:g}"
            table.add_row(
                g.submission_id, score, "; ".join(r.message for r in g.review_reasons)[:160]
            )
        console.print(table)
    statuses: dict[str, int] = defaultdict(int)
    for g in grades:
        statuses[g.status.value] += 1
    console.print("status: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())))


def main() -> None:
    app()


# --- the grading service -------------------------------------------------------------------

platform_app = typer.Typer(help="Platforms that post to the grading service.", no_args_is_help=True)
app.add_typer(platform_app, name="platform")
db_app = typer.Typer(help="The service's database.", no_args_is_help=True)
app.add_typer(db_app, name="db")


def _store():
    from grader.config import Settings
    from grader.store import Store

    store = Store(Settings().database_url)
    store.migrate()
    return store


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Create or migrate the schema of GRADER_DATABASE_URL to the newest version."""
    from grader.config import Settings

    _store()
    console.print(f"database at the newest schema: {Settings().database_url}")


@platform_app.command("add")
def platform_add(
    name: Annotated[str, typer.Argument(help="The platform's name, unique.")],
    exam: Annotated[
        list[str], typer.Option("--exam", help="An exam (bank name) it may post to; repeat.")
    ],
    webhook_url: Annotated[
        str | None, typer.Option(help="Where to POST each grade, signed.")
    ] = None,
) -> None:
    """Register a platform; prints its API key and webhook secret once (only a hash is kept)."""
    from grader.api.keys import new_key
    from grader.webhooks import new_secret

    store = _store()
    if store.platform_by_name(name) is not None:
        err.print(f"[bold red]error:[/] platform {name!r} exists")
        raise typer.Exit(code=2)
    served = _served_exams()
    for name in sorted(set(exam) - served):
        err.print(
            f"[yellow]warning:[/] exam {name!r} is not among the banks served ({', '.join(sorted(served))})"
        )
    key, secret = new_key(), new_secret()
    store.add_platform(name, exam, key.key_id, key.key_hash, secret, webhook_url)
    console.print(f"platform {name} may post to: {', '.join(sorted(set(exam)))}")
    print(f"api_key={key.key}")
    print(f"webhook_secret={secret}")


def _served_exams() -> set[str]:
    from grader.bank.files import load_bank
    from grader.config import Settings

    return {load_bank(path).name for path in Settings().banks if Path(path).exists()}


@platform_app.command("list")
def platform_list() -> None:
    """Platforms, their exams and webhook URLs (never keys)."""
    table = Table(title="platforms")
    for column in ("name", "exams", "webhook"):
        table.add_column(column)
    for p in _store().list_platforms():
        table.add_row(p.name, ", ".join(sorted(p.exams)), p.webhook_url or "")
    console.print(table)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8080,
    inline: Annotated[
        bool, typer.Option(help="Grade in this process (no Redis, no workers).")
    ] = False,
) -> None:
    """Run the HTTP intake (OpenAPI docs at /docs). Grading: workers on Redis, or --inline."""
    import uvicorn

    from grader.api.app import create_app
    from grader.api.dispatch import CeleryDispatcher, InlineDispatcher
    from grader.config import Settings
    from grader.exams import Graders, load_exams

    settings = Settings()
    store = _store()
    try:
        if inline:
            graders = Graders.load(settings)
            exams, dispatcher = graders.exams, InlineDispatcher(settings, store, graders)
        else:
            exams, dispatcher = load_exams(settings.banks), CeleryDispatcher(settings)
    except GraderError as exc:
        raise _fail(exc) from exc
    err.print(f"serving exams: {', '.join(sorted(exams))} ({'inline' if inline else 'workers'})")
    try:
        uvicorn.run(create_app(settings, store, exams, dispatcher), host=host, port=port)
    finally:
        dispatcher.close()


@app.command()
def worker(
    queues: Annotated[
        str, typer.Option(help="grade (the judge), io (webhooks), or both: grade,io.")
    ] = "grade,io",
    concurrency: Annotated[
        int | None,
        typer.Option(
            help="Pool processes. Default: 1 with a model judge (one engine per process; run "
            "one worker per GPU), the CPU count otherwise."
        ),
    ] = None,
    pool: Annotated[str, typer.Option(help="Celery pool: prefork or solo.")] = "prefork",
    loglevel: Annotated[str, typer.Option(help="Log level.")] = "INFO",
) -> None:
    """Start a Celery worker on GRADER_REDIS_URL with the service's defaults."""
    import os

    from grader.config import Settings

    settings = Settings()
    if concurrency is None:
        concurrency = 1 if settings.judge == "vllm" else (os.cpu_count() or 1)
    os.environ["GRADER_WORKER_LOADS_JUDGE"] = "1" if "grade" in queues.split(",") else "0"
    from workers.app import app as celery_app

    celery_app.worker_main(
        [
            "worker",
            "-Q",
            queues,
            "-c",
            str(concurrency),
            "-P",
            pool,
            "--loglevel",
            loglevel,
            "--without-mingle",
            "--without-gossip",
        ]
    )
