"""``grader suggest``: the answers to grade by hand first, as a calibration CSV to fill in.

The loop: ``grader suggest`` → fill in the score column → ``grader grade --graded TO_GRADE.csv``
(the scorer leans on the nearest of them) → review the ranked queue. No judge is loaded: the
choice reads the answers' e5 vectors (``engine.review.suggest``).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from grader.cli.app import app, console, err
from grader.cli.display import ProgressMode, make_display

HEADER = ("submission_id", "question_id", "score", "student", "answer")


@app.command()
def suggest(
    submissions: Annotated[Path, typer.Argument(help="Submissions JSONL.")],
    bank_path: Annotated[Path, typer.Option("--bank", "-b", help="Bank YAML.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Calibration CSV to write (score left empty).")
    ],
    per_question: Annotated[
        int, typer.Option("--per-question", "-k", min=1, help="Answers per question.")
    ] = 10,
    embed_model: Annotated[
        str | None,
        typer.Option(help="Packaged embedding model or sentence-transformers folder."),
    ] = None,
    progress: Annotated[
        ProgressMode,
        typer.Option(help="auto: live on a terminal, a line per question otherwise; rich; plain."),
    ] = ProgressMode.AUTO,
) -> None:
    """Write the K answers per question whose scores would help the rest most: each lowers
    most what a regression over the e5 vectors cannot yet tell about the others (greedy
    experimental design), so they span the answer groups, never two near-copies. Fill in
    every score (or delete a row), then run `grader grade --graded` with the file."""
    from grader.cli.cohort import load_exam
    from grader.engine.review.suggest import candidates, first_of

    bank, pending, settings, embedder = load_exam(bank_path, submissions, embed_model)
    by_question = candidates(bank, pending, settings.rules)
    with make_display(progress, err, verbose=False) as display:
        read = display.counter("answers read", sum(map(len, by_question.values())), "answers")
        picked = first_of(bank, by_question, embedder, per_question, progress=read.advance)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows([s.id, s.question_id, "", s.student or "", s.answer] for s in picked)
    questions = len({s.question_id for s in picked})
    console.print(
        f"wrote {escape(str(out))}: {len(picked)} answer(s) to grade over {questions} "
        f"question(s); fill in the score column, then `grader grade --graded {escape(str(out))}`"
    )
