"""``grader explain``: why one answer got its grade, read from a grades file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from grader.cli.app import app, console, fail


@app.command()
def explain(
    grades: Annotated[Path, typer.Argument(help="Grades JSONL (`grader grade --out`).")],
    submission_id: Annotated[str, typer.Argument(help="The answer's submission id.")],
) -> None:
    """Show how one answer's grade was decided: each criterion's points and the sentence that
    earned them, then every step that set or moved the score (the judge or a rule, the
    scorer, the substance rules, the conclusion, the injection bound), with why."""
    from grader.engine.record.explain import explain as explained
    from grader.errors import GraderError, SubmissionError
    from grader.files.grades import read_grades

    try:
        if not grades.is_file():
            raise SubmissionError("no such grades file", file=grades)
        found = {g.submission_id: g for g in read_grades(grades)}
        if submission_id not in found:
            raise SubmissionError(
                f"no grade for submission {submission_id!r} ({len(found)} graded answers "
                "in the file)",
                file=grades,
            )
    except GraderError as exc:
        raise fail(exc) from exc
    for line in explained(found[submission_id]):
        console.print(escape(line), highlight=False)
