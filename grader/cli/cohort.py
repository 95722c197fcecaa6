"""``grader groups`` and ``grader integrity``: compare the answers to one question (its cohort)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from grader.cli.app import app, console, err, fail
from grader.errors import GraderError


def load_exam(bank_path: Path, submissions: Path, embed_model: str | None):
    """Bank, its submissions, settings and embedder for the commands that compare answers
    (``groups``, ``integrity``, ``suggest``); a clear error and exit 2 without an embedder."""
    from grader.bank.files import load_bank
    from grader.config import EmbeddingSettings, Settings
    from grader.embed import make_embedder
    from grader.files.submissions import read_submissions

    try:
        given: dict[str, Any] = {"model": embed_model} if embed_model else {}
        settings = Settings(embeddings=EmbeddingSettings(**given))
        bank = load_bank(bank_path)
        pending = read_submissions(submissions, bank)
        embedder = make_embedder(settings, progress=lambda m: err.print(escape(m)))
    except GraderError as exc:
        raise fail(exc) from exc
    except ValueError as exc:  # settings validation
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(code=2) from exc
    if embedder is None:
        err.print("[bold red]error:[/] this command compares answers: it needs an embedding model")
        raise typer.Exit(code=2)
    return bank, pending, settings, embedder


_EMBED_MODEL_OPTION = typer.Option(
    help="Packaged embedding model or sentence-transformers folder "
    "(default: GRADER_EMBED_MODEL or multilingual-e5-small)."
)


@app.command()
def groups(
    submissions: Annotated[Path, typer.Argument(help="Submissions JSONL.")],
    question_id: Annotated[str, typer.Argument(help="The question whose answers to group.")],
    bank_path: Annotated[Path, typer.Option("--bank", "-b", help="Bank YAML.")],
    threshold: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Mean cosine within a group (default: GRADER_GROUP_COSINE, 0.90).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the groups as JSON.")] = False,
    embed_model: Annotated[str | None, _EMBED_MODEL_OPTION] = None,
) -> None:
    """Cluster one question's answers into groups of answers that say the same thing.

    Grade a group together: its representative first, then the rest against it. Groups are
    numbered by size; the same answers always get the same ids (`grader grade` records them).
    """
    from grader.engine.signals.cohort import group_answers

    bank, pending, settings, embedder = load_exam(bank_path, submissions, embed_model)
    question = bank.get(question_id)
    if question is None:
        err.print(
            f"[bold red]error:[/] no question {escape(repr(question_id))} in {escape(str(bank_path))}"
        )
        raise typer.Exit(code=2)
    from grader.engine.reading.blanks import blank_reason

    mine = sorted((s for s in pending if s.question_id == question_id), key=lambda s: s.id)
    if not mine:
        err.print(
            f"[bold red]error:[/] {escape(str(submissions))} has no answers to "
            f"{escape(question_id)}"
        )
        raise typer.Exit(code=2)
    answers = [s for s in mine if blank_reason(s.answer, settings.rules.min_answer_chars) is None]
    if len(answers) < len(mine):
        err.print(f"{len(mine) - len(answers)} blank or non-answer(s) left out of the groups")
    try:
        vectors = embedder.encode([s.answer for s in answers])
    except GraderError as exc:
        raise fail(exc) from exc
    cosine = settings.signals.group_cosine if threshold is None else threshold
    found = group_answers(vectors, cosine)
    if as_json:
        print(
            json.dumps(
                [
                    {
                        "group": g.id,
                        "size": g.size,
                        "cohesion": g.cohesion,
                        "representative": answers[g.representative].id,
                        "members": [answers[m].id for m in g.members],
                    }
                    for g in found
                ],
                ensure_ascii=False,
                indent=1,
            )
        )
        return
    table = Table(title=f"{escape(question_id)}: {len(answers)} answers in {len(found)} groups")
    for column in ("group", "size", "cohesion", "representative answer", "members"):
        table.add_column(column, overflow="fold")
    for g in found:
        rep = answers[g.representative]
        members = [answers[m].id for m in g.members]
        table.add_row(
            g.id,
            str(g.size),
            f"{g.cohesion:.3f}",
            escape(f"[{rep.id}] " + rep.answer[:120] + ("…" if len(rep.answer) > 120 else "")),
            escape(", ".join(members[:8]))
            + (f" … +{len(members) - 8}" if len(members) > 8 else ""),
        )
    console.print(table)


@app.command()
def integrity(
    submissions: Annotated[Path, typer.Argument(help="Submissions JSONL.")],
    bank_path: Annotated[Path, typer.Option("--bank", "-b", help="Bank YAML.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="HTML report to write.")] = Path(
        "out/integrity.html"
    ),
    threshold: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Cosine for a near-duplicate (default: GRADER_DUPLICATE_COSINE, 0.97).",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Also print the pairs as JSON lines.")
    ] = False,
    embed_model: Annotated[str | None, _EMBED_MODEL_OPTION] = None,
) -> None:
    """Report different students' near-identical answers to the same question, side by side."""
    from grader.engine.signals.integrity import suspect_pairs, write_report

    bank, pending, settings, embedder = load_exam(bank_path, submissions, embed_model)
    if threshold is not None:
        signals = settings.signals.model_copy(update={"duplicate_cosine": threshold})
        settings = settings.model_copy(update={"signals": signals})
    try:
        pairs = suspect_pairs(bank, pending, embedder, settings.rules, settings.signals)
    except GraderError as exc:
        raise fail(exc) from exc
    write_report(
        pairs, out, bank=bank, source=submissions, signals=settings.signals, answers=len(pending)
    )
    if as_json:
        for pair in pairs:
            print(json.dumps(pair.as_json(), ensure_ascii=False))
    table = Table(title=f"near-duplicate pairs: {len(pairs)}")
    for column in ("question", "similarity", "students", "first answer"):
        table.add_column(column, overflow="fold")
    for p in pairs[:20]:
        table.add_row(
            escape(p.question_id),
            f"{p.similarity:.3f}",
            escape(f"{p.first.student or p.first.id} / {p.second.student or p.second.id}"),
            escape(p.first.answer[:80] + ("…" if len(p.first.answer) > 80 else "")),
        )
    (err if as_json else console).print(table)
    (err if as_json else console).print(f"report: {escape(str(out))}")
