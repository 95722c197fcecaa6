"""``grader bank``: import exam papers into question banks and inspect them."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from grader.cli.app import app, console, err, fail
from grader.errors import GraderError

bank_app = typer.Typer(
    help="Import exam papers into question banks and inspect them.", no_args_is_help=True
)
app.add_typer(bank_app, name="bank")


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
        raise fail(exc) from exc
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
        raise fail(exc) from exc
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
