"""``grader calibrate judge-trust``: how far a judge model's own readings of criteria can be
trusted, and where its claim check states a part, learned from an instructor's points per
criterion and stored under its name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from grader.cli.app import console, err, fail
from grader.cli.calibrate import calibrate_app
from grader.errors import GraderError

if TYPE_CHECKING:
    from grader.engine.scoring.judge_trust import JudgeTrust


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
            help="Grades JSONL graded with the judge reading every criterion and claim "
            "(GRADER_JUDGE_PLAN=full): its own points are in details.judge_points, its claim "
            "checks in details.claims.parts[].gap.",
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
    decide nothing, as for any model never measured; 1: they decide every criterion). Where
    the grades carry its claim checks, also learn per answer language the margin at which a
    part it states is one you credited (90 % of the time), or that none is: there it is not
    asked."""
    from grader.config import Settings
    from grader.engine.scoring.judge_trust import MIN_READINGS, fit, fit_claims, store_claims
    from grader.engine.scoring.judge_trust import store as store_entry

    try:
        target = trust_file or Settings().judge.trust
        if target is None:
            err.print("[bold red]error:[/] name the trust file: --trust-file or GRADER_JUDGE_TRUST")
            raise typer.Exit(code=2)
        readings, claims, models = _readings(human, grades)
    except GraderError as exc:
        raise fail(exc) from exc
    if len(models) != 1 or not next(iter(models)):
        named = ", ".join(sorted(m or "(none)" for m in models)) or "none"
        err.print(f"[bold red]error:[/] the grades name {escape(named)} as their judge model: "
                  "fit one judge at a time, on grades its criterion checks read")  # fmt: skip
        raise typer.Exit(code=2)
    model, data = next(iter(models)), f"{human.name} × {grades.name}"
    if claims and len(readings) < MIN_READINGS:  # the claim margins alone: a trust stays
        entry = store_claims(model, fit_claims(claims, data=data), target)
    else:
        try:
            entry = fit(model, readings, data=data)
        except ValueError as exc:
            err.print(f"[bold red]error:[/] {escape(str(exc))} (criteria scored in both files "
                      "with the judge's own points)")  # fmt: skip
            raise typer.Exit(code=2) from exc
        if claims:
            entry = entry.model_copy(update={"claims": fit_claims(claims, data=data)})
        store_entry(entry, target)
    _report(entry, len(claims), target)


def _readings(
    human: Path, grades: Path
) -> tuple[list[tuple[str, float, float]], list[tuple[str, float, bool]], set[str]]:
    """The judge's criterion readings (key, its share, the instructor's), its claim checks
    (answer language, gap, whether the instructor credited the part's criterion), and the
    judge models the grades name."""
    from grader.calibrate import read_human_scores
    from grader.files.grades import read_grades

    humans = {h.submission_id: h for h in read_human_scores(human)}
    readings: list[tuple[str, float, float]] = []
    claims: list[tuple[str, float, bool]] = []
    models: set[str] = set()
    for grade in read_grades(grades):
        scored = humans.get(grade.submission_id)
        own = grade.details.judge_points or {}
        check = grade.details.claims
        language = check.language if check else "zh"
        asked = [(p, p.gap) for p in check.parts if p.gap is not None] if check else []
        if scored is None or not scored.criteria or not (own or asked):
            continue
        models.add(grade.provenance.model or "")
        tops = {c.id: c.max_points for c in grade.criteria}
        for c in grade.criteria:
            if c.id in own and c.id in scored.criteria and c.max_points > 0:
                key = f"{grade.question_id}/{c.id}"
                readings.append(
                    (key, own[c.id] / c.max_points, scored.criteria[c.id] / c.max_points)
                )
        for part, gap in asked:
            given = scored.criteria.get(part.criterion)
            if given is not None:
                claims.append((language, gap, given >= 0.5 * tops[part.criterion]))
    return readings, claims, models


def _report(entry: JudgeTrust, claims: int, target: Path) -> None:
    from grader.engine.scoring.judge_trust import (
        CLAIM_PRECISION,
        MIN_CLAIM_READINGS,
        MIN_STATED,
    )

    console.print(
        f"{escape(entry.model)}: trust {entry.trust:.2f} over {entry.readings} criterion "
        f"readings (judge off by {entry.judge_mae:.0%} of a criterion's points, its mean by "
        f"{entry.mean_mae:.0%}); written to {escape(str(target))}"
    )
    for language, fitted in sorted(entry.claims.items()):
        of = f"{fitted.precision:.0%} of the {fitted.stated} parts stated at {fitted.at:.2f}"
        decides = (f"states a part at a margin of {fitted.margin:.2f}" if fitted.margin is not None
                   else f"is not asked: no margin reached {CLAIM_PRECISION:.0%}")  # fmt: skip
        console.print(
            f"  claim check, {language} answers: {decides} ({of} were credited; of all "
            f"{fitted.readings} parts asked, {fitted.credited:.0%})"
        )
    if claims and not entry.claims:
        console.print(
            f"  claim check: too few parts asked ({claims}; a language needs "
            f"{MIN_CLAIM_READINGS}, {MIN_STATED} of them stated); the judge is not asked claims"
        )
