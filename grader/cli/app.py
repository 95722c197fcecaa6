"""The root ``grader`` command and what every subcommand shares: consoles, the error exit."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape

from grader.errors import GraderError

app = typer.Typer(
    help="Grade exam answers: objective questions exactly, essays against rubrics.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def fail(exc: GraderError) -> typer.Exit:
    """Print a GraderError (it names the file, line or field) and exit 2; the message quotes
    the user's text, so it is escaped, never read as console markup."""
    err.print(f"[bold red]error:[/] {escape(str(exc))}")
    return typer.Exit(code=2)
