"""``grader calibrate judge-trust``: how far a judge model's own readings of criteria can be
trusted, learned from an instructor's points per criterion and stored under its name."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from grader.cli.app import console, err, fail
from grader.cli.calibrate import calibrate_app
from grader.errors import GraderError


@calibrate_app.command("judge-trust")
def calibrate_judge_trust(
    human: Annotated[
        Path,
        typer.Option(
            "--human",
            help="CSV: submission_id, question_id, score and a column per criterion (C1, C2, …).",
        ),
    ],
    grades: Annotated[
        Path,
        typer.Option(
            "--grades",
            help="Grades JSONL graded with the judge reading every criterion "
            "(GRADER_JUDGE_PLAN=full): its own points are in details.judge_points.",
        ),
    ],
    trust_file: Annotated[
        Path | None,
        typer.Option(
            "--trust-file",
            help="The trust file to write the model's entry into (default: GRADER_JUDGE_TRUST).",
        ),
    ] = None,
) -> None:
    """Learn how far the judge that graded GRADES reads criteria as you do, and store it under
    its model's name: grading then lets that judge's readings decide in proportion (0: they
    decide nothing, as for any model never measured; 1: they decide every criterion)."""
    from grader.calibrate import read_human_scores
    from grader.config import Settings
    from grader.engine.scoring.judge_trust import fit, store
    from grader.files.grades import read_grades

    try:
        target = trust_file or Settings().judge.trust
        if target is None:
            err.print("[bold red]error:[/] name the trust file: --trust-file or GRADER_JUDGE_TRUST")
            raise typer.Exit(code=2)
        humans = {h.submission_id: h for h in read_human_scores(human)}
        readings, models = [], set()
        for grade in read_grades(grades):
            scored = humans.get(grade.submission_id)
            own = grade.details.judge_points
            if scored is None or not own or not scored.criteria:
                continue
            models.add(grade.provenance.model or "")
            for c in grade.criteria:
                if c.id in own and c.id in scored.criteria and c.max_points > 0:
                    key = f"{grade.question_id}/{c.id}"
                    readings.append(
                        (key, own[c.id] / c.max_points, scored.criteria[c.id] / c.max_points)
                    )
    except GraderError as exc:
        raise fail(exc) from exc
    if len(models) != 1 or not next(iter(models)):
        named = ", ".join(sorted(m or "(none)" for m in models)) or "none"
        err.print(f"[bold red]error:[/] the grades name {escape(named)} as their judge model: "
                  "fit one judge at a time, on grades its criterion checks read")  # fmt: skip
        raise typer.Exit(code=2)
    model = next(iter(models))
    try:
        entry = fit(model, readings, data=f"{human.name} × {grades.name}")
    except ValueError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))} (criteria scored in both files with "
                  "the judge's own points)")  # fmt: skip
        raise typer.Exit(code=2) from exc
    store(entry, target)
    console.print(
        f"{escape(model)}: trust {entry.trust:.2f} over {entry.readings} criterion readings "
        f"(judge off by {entry.judge_mae:.0%} of a criterion's points, its mean by "
        f"{entry.mean_mae:.0%}); written to {escape(str(target))}"
    )
