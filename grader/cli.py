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
    batch_size: Annotated[int, typer.Option(min=1, help="Submissions per grading batch.")] = 64,
) -> None:
    """Grade a submissions file into a grades file, resumably, with a summary at the end."""
    from grader.bank.files import load_bank
    from grader.config import Settings
    from grader.gradebook import GradeWriter, read_grades
    from grader.pipeline import grade_many
    from grader.submissions import read_submissions

    try:
        bank = load_bank(bank_path)
        pending = read_submissions(submissions, bank)
        done = {g.submission_id for g in read_grades(out)}
    except GraderError as exc:
        raise _fail(exc) from exc
    todo = [s for s in pending if s.id not in done]
    if done:
        console.print(
            f"{len(pending) - len(todo)} of {len(pending)} already graded in {out}, skipping them"
        )
    settings = Settings()
    with (
        GradeWriter(out) as writer,
        Progress(
            TextColumn("grading"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=err,
            transient=False,
        ) as progress,
    ):
        task = progress.add_task("grading", total=len(todo))
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            writer.write(grade_many(batch, bank, settings))
            progress.advance(task, len(batch))
    _summary(read_grades(out), {s.id for s in pending})


def _summary(grades: list, submission_ids: set[str]) -> None:
    grades = [g for g in grades if g.submission_id in submission_ids]
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
    statuses: dict[str, int] = defaultdict(int)
    for g in grades:
        statuses[g.status.value] += 1
    console.print("status: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())))


def main() -> None:
    app()
