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
    from grader.engine.reading.claims.exam import ProposedClaim
    from grader.models import Bank, Conclusion, Question, Rubric

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
    from grader.engine.reading.rubrics import derive_rubric, load_rubric, rubric_dir

    paths = banks or sorted(Path("rubrics").glob("*.yaml"))
    if not paths:
        err.print("[bold red]error:[/] no bank files given and none in rubrics/")
        raise typer.Exit(code=2)
    failures = 0
    derived = 0
    table = Table(title="rubrics")
    for column in ("question", "type", "points", "rubric", "version", "conclusion", "exam says"):
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
                    _exam_claims(bank, q, derive_rubric(q)),
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
                _exam_claims(bank, q, rubric),
            )
    console.print(table)
    _check_notes(derived)
    if failures:
        raise typer.Exit(code=1)


def _check_notes(derived: int) -> None:
    """What the check's table asks of the instructor."""
    if derived:
        console.print(
            f"[yellow]{derived} subjective question(s) have no reviewed rubric:[/] their grades "
            "come from a rubric derived from the reference answer (or an unreviewed draft). "
            "Write or review rubrics/<bank>/<question_id>.yaml, or `grader rubric draft`."
        )
    console.print(
        "exam says: false statements of the bank's own objective items on the question's topic "
        "— `grader rubric claims BANK QUESTION_ID` lists them and adds the ones you accept"
    )


def _exam_claims(bank: Bank, question: Question, rubric: Rubric) -> str:
    """How many of the exam's false statements on the question's topic its rubric does not
    list yet (``grader rubric claims`` shows them)."""
    from grader.engine.reading.claims.exam import propose

    false = len(propose(bank, question, rubric))
    return f"{false} to review" if false else ""


def _conclusion(conclusion: Conclusion | None) -> str:
    """What the answer must conclude, and what a wrong one costs, for review."""
    if conclusion is None:
        return ""
    from grader.engine.finish.conclusion import cap_share

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
    from grader.engine.judging.draft import draft_rubric
    from grader.engine.reading.claims.exam import propose
    from grader.engine.reading.rubrics import rubric_dir, save_rubric, with_wrong_claim
    from grader.judge import make_judge
    from grader.models import WrongClaim

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
    exam = propose(bank, question, rubric)
    for proposal in exam:  # a draft is unreviewed: the exam's false statements go in for review
        rubric = with_wrong_claim(rubric, proposal.criterion, WrongClaim(claim=proposal.claim))
    path = save_rubric(rubric, rubric_dir(bank_path))
    console.print(
        f"wrote {escape(str(path))} ({len(rubric.criteria)} criteria, reviewed: false, "
        f"{len(exam)} wrong claim(s) from the exam's objective items) — edit it, then run "
        "`grader rubric check`"
    )


@rubric_app.command("claims")
def rubric_claims(
    bank_path: Annotated[Path, typer.Argument(metavar="BANK", help="Bank YAML file.")],
    question_id: Annotated[str, typer.Argument(help="The essay question.")],
    accept: Annotated[
        list[str] | None,
        typer.Option(
            "--accept",
            metavar="N[:CRITERION]",
            help="Add proposal N (a false statement) to the rubric as a wrong claim, on its "
            "proposed criterion or the one named; repeat for more.",
        ),
    ] = None,
    show_true: Annotated[
        bool, typer.Option("--true", help="Also list the exam's true statements on the topic.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The proposals as JSON.")] = False,
) -> None:
    """The exam's own objective items on this question's topic, as labelled claims: false
    statements are proposed as wrong claims for the rubric, true ones shown for its parts."""
    from grader.bank.files import load_bank
    from grader.engine.reading.claims.exam import propose
    from grader.engine.reading.rubrics import (
        edit_rubric_file,
        load_rubrics,
        rubric_dir,
        rubric_for,
        with_wrong_claim,
    )
    from grader.models import WrongClaim

    try:
        bank = load_bank(bank_path)
    except GraderError as exc:
        raise fail(exc) from exc
    question = bank.get(question_id)
    if question is None or question.type.objective:
        err.print(f"[bold red]error:[/] {escape(repr(question_id))} is not an essay question of "
                  f"{escape(str(bank_path))}")  # fmt: skip
        raise typer.Exit(code=2)
    folder = rubric_dir(bank_path)
    path = folder / f"{question_id}.yaml"
    try:
        rubric = rubric_for(question, load_rubrics(bank_path, bank))
    except GraderError as exc:
        raise fail(exc) from exc
    proposals = propose(bank, question, rubric, with_true=show_true)
    if accept:
        chosen = [_accepted(choice, proposals, rubric) for choice in accept]
        for number, criterion in chosen:
            rubric = with_wrong_claim(
                rubric, criterion, WrongClaim(claim=proposals[number - 1].claim)
            )
        saved = edit_rubric_file(rubric, folder)
        console.print(f"added {len(chosen)} wrong claim(s) to {escape(str(saved))} "
                      f"(version {rubric.version}); add `when:` patterns to catch their "
                      "paraphrases (README, Rubrics)")  # fmt: skip
        return
    if as_json:
        console.print_json(data=[p.model_dump() for p in proposals])
        return
    table = Table(title=f"claims from the exam for {question_id}"
                  + ("" if path.exists() else " (no rubric file: the derived rubric)"))  # fmt: skip
    for column in ("#", "from", "statement", "key says", "criterion", "topic"):
        table.add_column(column)
    for n, p in enumerate(proposals, start=1):
        table.add_row(str(n), p.source, escape(p.claim), "true" if p.true else "[red]false[/]",
                      p.criterion, f"{p.topic:.0%}")  # fmt: skip
    console.print(table)
    if any(not p.true for p in proposals):
        console.print("accept false ones as wrong claims: "
                      f"grader rubric claims {escape(str(bank_path))} {question_id} --accept N")  # fmt: skip


def _accepted(choice: str, proposals: list[ProposedClaim], rubric: Rubric) -> tuple[int, str]:
    """(proposal number, criterion id) from ``N`` or ``N:CRITERION``; bad ones exit 2."""
    number, _, criterion = choice.partition(":")
    ids = [c.id for c in rubric.criteria]
    if not number.isdigit() or not 1 <= int(number) <= len(proposals):
        err.print(f"[bold red]error:[/] --accept {escape(choice)}: no proposal {escape(number)} "
                  f"(1–{len(proposals)})")  # fmt: skip
        raise typer.Exit(code=2)
    proposal = proposals[int(number) - 1]
    if proposal.true:
        err.print(f"[bold red]error:[/] --accept {escape(choice)}: the key says "
                  f"{escape(proposal.claim)!r} is true; a true statement is no wrong claim")  # fmt: skip
        raise typer.Exit(code=2)
    criterion = criterion or proposal.criterion
    if criterion not in ids:
        err.print(f"[bold red]error:[/] --accept {escape(choice)}: no criterion "
                  f"{escape(criterion)!r} (the rubric has {', '.join(ids)})")  # fmt: skip
        raise typer.Exit(code=2)
    return int(number), criterion
