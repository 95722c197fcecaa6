"""``grader bank``: import exam papers into question banks and inspect them."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grader.cli.app import app, console, err, fail
from grader.errors import GraderError

if TYPE_CHECKING:
    from grader.bank.report import ReportEntry

bank_app = typer.Typer(
    help="Import exam papers into question banks and inspect them.", no_args_is_help=True
)
app.add_typer(bank_app, name="bank")


@bank_app.command("import")
def bank_import(
    papers: Annotated[list[Path], typer.Argument(help="Exam paper text files (UTF-8 or GB18030).")],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Bank YAML to write, e.g. rubrics/NAME.yaml."),
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="Bank name (default: the output file's stem).")
    ] = None,
    strict: Annotated[
        bool, typer.Option(help="Fail (exit 1, nothing written) on any report entry.")
    ] = False,
    check: Annotated[bool, typer.Option(help="Print the import report and write nothing.")] = False,
) -> None:
    """Read exam papers (sections, questions, options, answers, explanations) into a bank.

    Prints the import report: every question that lacks its key or points, and every piece of
    the paper that was not used, with its file and line.
    """
    from grader.bank.files import import_papers, save_bank

    if out is None and not check:
        err.print("[bold red]error:[/] give --out BANK.yaml, or --check to only print the report")
        raise typer.Exit(code=2)
    try:
        bank, report = import_papers(papers, name or (out.stem if out else papers[0].stem))
    except GraderError as exc:
        raise fail(exc) from exc
    if report:
        _print_report(report)
    counts: dict[str, int] = defaultdict(int)
    for q in bank.questions:
        counts[q.type.value] += 1
    summary = (
        f"{len(bank.questions)} questions ({', '.join(f'{n} {t}' for t, n in counts.items())})"
    )
    entries = f"{len(report)} report entr{'y' if len(report) == 1 else 'ies'}"
    if strict and report:
        err.print(f"[bold red]error:[/] {entries} and --strict: nothing written")
        raise typer.Exit(code=1)
    if check or out is None:
        console.print(f"checked {len(papers)} paper(s): {summary}, {entries}; nothing written")
        return
    save_bank(bank, out)
    console.print(f"wrote {escape(str(out))}: {summary}, {entries}")


def _print_report(report: list[ReportEntry]) -> None:
    """The import report as a table: where, which question, what is missing, the text there."""
    table = Table(title=f"import report — {len(report)} entries", show_lines=False)
    for column in ("where", "question", "problem", "message", "text around it"):
        table.add_column(column, overflow="fold")
    for entry in report:
        table.add_row(
            escape(f"{entry.file}:{entry.line}"),
            escape(entry.question or ""),
            entry.problem.value,
            escape(entry.message),
            escape(entry.context),
        )
    _table_console().print(table)


def _table_console() -> Console:
    """The terminal, or into a file or pipe a console wide enough that cells are not folded."""
    return console if console.is_terminal else Console(soft_wrap=True, width=200)


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
        raise fail(exc) from exc
    if as_json:
        print(
            json.dumps(
                [q.model_dump(mode="json") for q in bank.questions], ensure_ascii=False, indent=1
            )
        )
        return
    table = Table(title=f"{escape(bank.name)} — {len(bank.questions)} questions", show_lines=False)
    for column in ("id", "no.", "type", "pts", "stem", "answer", "accepted"):
        table.add_column(column, overflow="fold" if column in ("stem", "accepted") else "ellipsis")
    for q in bank.questions:
        answer = q.answer if not isinstance(q.answer, bool) else ("√" if q.answer else "×")
        flag = " [red](incomplete)[/]" if q.incomplete else ""
        table.add_row(
            escape(q.id),
            escape(q.number),
            q.type.value,
            "" if q.points is None else f"{q.points:g}",
            escape(q.stem[:80] + ("…" if len(q.stem) > 80 else "")),
            escape("" if answer is None else str(answer)[:30]) + flag,
            # fill-in: the accepted alternatives of each blank, blanks separated by ；
            escape(" ； ".join(" | ".join(alternatives) for alternatives in q.blanks)),
        )
    _table_console().print(table)
