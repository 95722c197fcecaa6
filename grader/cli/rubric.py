"""``grader rubric``: check rubric files and draft new ones."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from grader.cli.app import app, console, err, fail
from grader.errors import GraderError

if TYPE_CHECKING:
    from grader.models import Conclusion

rubric_app = typer.Typer(help="Check rubric files and draft new ones.", no_args_is_help=True)
app.add_typer(rubric_app, name="rubric")


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
    from grader.engine.rubrics import derive_rubric, load_rubric, rubric_dir

    paths = banks or sorted(Path("rubrics").glob("*.yaml"))
    if not paths:
        err.print("[bold red]error:[/] no bank files given and none in rubrics/")
        raise typer.Exit(code=2)
    failures = 0
    derived = 0
    table = Table(title="rubrics")
    for column in ("question", "type", "points", "rubric", "version", "conclusion"):
        table.add_column(column)
    for bank_path in paths:
        try:
            bank = load_bank(bank_path)
        except GraderError as exc:
            raise fail(exc) from exc
        folder = rubric_dir(bank_path)
        files = {p.stem: p for p in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}
        for stem in sorted(files.keys() - {q.id for q in bank.questions}):
            failures += 1
            err.print(
                f"[red]invalid:[/] {escape(f'{files[stem]}: no question {stem!r} in {bank_path}')}"
            )
        for q in bank.questions:
            if q.type.objective:
                continue
            if q.id not in files:
                derived += 1
                table.add_row(
                    escape(q.id),
                    q.type.value,
                    f"{q.points or ''}",
                    "[yellow]none: derived from the reference — review this rubric[/]",
                    "",
                    _conclusion(derive_rubric(q).conclusion),
                )
                continue
            try:
                rubric = load_rubric(files[q.id], bank)
            except GraderError as exc:
                failures += 1
                err.print(f"[red]invalid:[/] {escape(str(exc))}")
                table.add_row(
                    escape(q.id), q.type.value, f"{q.points or ''}", "[red]invalid[/]", "", ""
                )
                continue
            derived += not rubric.reviewed
            state = "ok" if rubric.reviewed else "[yellow]ok, unreviewed — review this rubric[/]"
            table.add_row(
                escape(q.id),
                q.type.value,
                f"{rubric.points:g}" + (" (the paper prints none)" if q.points is None else ""),
                state,
                escape(rubric.version),
                _conclusion(rubric.conclusion),
            )
    console.print(table)
    if derived:
        console.print(
            f"[yellow]{derived} subjective question(s) have no reviewed rubric:[/] their grades "
            "come from a rubric derived from the reference answer (or an unreviewed draft). "
            "Write or review rubrics/<bank>/<question_id>.yaml, or `grader rubric draft`."
        )
    if failures:
        raise typer.Exit(code=1)


def _conclusion(conclusion: Conclusion | None) -> str:
    """What the answer must conclude, and what a wrong one costs, for review."""
    if conclusion is None:
        return ""
    from grader.engine.conclusion import cap_share

    cost = f"cap {cap_share(conclusion):.0%}" if conclusion.gate else "gate off"
    return escape(f"{conclusion.kind}: {conclusion.expected} ({cost})")


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
    from grader.config import JudgeSettings, Settings
    from grader.engine.draft import draft_rubric
    from grader.engine.rubrics import rubric_dir, save_rubric
    from grader.judge import make_judge

    try:
        given: dict[str, Any] = {"backend": judge} if judge else {}
        settings = Settings(judge=JudgeSettings(**given))
        bank = load_bank(bank_path)
    except GraderError as exc:
        raise fail(exc) from exc
    question = bank.get(question_id)
    if question is None or question.type.objective:
        err.print(
            f"[bold red]error:[/] {escape(repr(question_id))} is not a subjective question of "
            f"{escape(str(bank_path))}"
        )
        raise typer.Exit(code=2)
    target = rubric_dir(bank_path) / f"{question_id}.yaml"
    if target.exists() and not force:
        err.print(f"[bold red]error:[/] {escape(str(target))} exists; use --force to overwrite")
        raise typer.Exit(code=2)
    backend = make_judge(settings)
    if backend is None:
        err.print("[bold red]error:[/] drafting needs a judge; GRADER_JUDGE is 'none'")
        raise typer.Exit(code=2)
    try:
        rubric = draft_rubric(question, backend)
    except GraderError as exc:
        raise fail(exc) from exc
    finally:
        backend.close()
    path = save_rubric(rubric, rubric_dir(bank_path))
    console.print(
        f"wrote {escape(str(path))} ({len(rubric.criteria)} criteria, reviewed: false) — edit it, "
        "then run `grader rubric check`"
    )
