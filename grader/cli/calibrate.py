"""``grader calibrate``: the judge against an instructor's grades; anchors; score mapping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from grader.cli.app import app, console, err, fail
from grader.errors import GraderError

calibrate_app = typer.Typer(
    help="Check the judge against an instructor's grades; promote anchors; map scores."
)
app.add_typer(calibrate_app, name="calibrate")


@calibrate_app.callback(invoke_without_command=True)
def calibrate_run(
    ctx: typer.Context,
    human: Annotated[
        Path | None,
        typer.Option(
            "--human",
            help="CSV: submission_id, question_id, score; optional answer, note and one "
            "column per criterion id (C1, C2, ...).",
        ),
    ] = None,
    grades: Annotated[
        Path | None, typer.Option("--grades", help="Grades JSONL written by `grader grade`.")
    ] = None,
    bank_path: Annotated[
        Path | None,
        typer.Option(
            "--bank",
            help="Bank YAML: point scales from the bank and its rubrics (default: the grades' "
            "max_score); answers that are anchors of their rubric are left out.",
        ),
    ] = None,
    submissions: Annotated[
        Path | None,
        typer.Option(help="Submissions JSONL: shows the answers and catches unknown ids."),
    ] = None,
    report: Annotated[
        Path | None, typer.Option(help="Write an HTML report with PNG plots into this folder.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    compare_with: Annotated[
        Path | None,
        typer.Option(
            "--compare",
            help="Earlier grades JSONL: agreement before and after, side by side, on the "
            "answers both runs scored.",
        ),
    ] = None,
    mapping: Annotated[
        bool,
        typer.Option(
            "--mapping",
            help="Learn a per-question isotonic score mapping; report it cross-validated.",
        ),
    ] = False,
    save_mapping: Annotated[
        Path | None,
        typer.Option(
            help="Save the mapping (JSON) for `grader calibrate apply`; implies --mapping. "
            "Questions where it does not lower the cross-validated MAE keep the judge's scores."
        ),
    ] = None,
    folds: Annotated[int, typer.Option(min=2, help="Cross-validation folds for --mapping.")] = 5,
    top: Annotated[int, typer.Option(min=0, help="Largest disagreements to list.")] = 10,
    bootstrap: Annotated[
        int, typer.Option(min=0, help="Bootstrap resamples for 95 % intervals (0: none).")
    ] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the folds.")] = 0,
) -> None:
    """Agreement between the judge and an instructor: QWK, Pearson, Spearman, MAE, exact and
    ±1 agreement, judge − human, with 95 % intervals, overall, per question and per criterion,
    and the largest disagreements.

    Subcommands: `promote` turns graded answers into rubric anchors; `apply` applies a saved
    score mapping to new grades.
    """
    if ctx.invoked_subcommand is not None:
        return
    if human is None or grades is None:
        console.print(ctx.get_help())
        raise typer.Exit(code=0 if human is None and grades is None else 2)
    from grader.calibrate import (
        calibrate,
        compare,
        cross_validate,
        fit_mapping,
        read_answers,
    )
    from grader.calibrate import (
        save_mapping as write_mapping,
    )

    try:
        humans, scales, anchors = _calibration_inputs(human, bank_path)
        answers = read_answers(submissions) if submissions else None
        pairing = _pairing(humans, grades, human, scales, answers, anchors)
        before = (
            _pairing(humans, compare_with, human, scales, answers, anchors)
            if compare_with
            else None
        )
    except GraderError as exc:
        raise fail(exc) from exc
    result = calibrate(pairing, top=top, bootstrap=bootstrap, seed=seed)
    comparison = (
        compare(before, pairing, top=top, bootstrap=bootstrap, seed=seed) if before else None
    )
    checks = None
    if mapping or save_mapping:
        checks = cross_validate(pairing.pairs, folds=folds, seed=seed)
        if save_mapping:
            learned = fit_mapping(pairing.pairs, checks=checks)
            write_mapping(learned, save_mapping)
            err.print(
                f"wrote {save_mapping}: mappings for {len(learned.questions)} question(s), "
                f"{len(learned.skipped)} left as the judge scored them"
            )
    if report:
        from grader.calibrate.report import write_report

        path = write_report(result, pairing.pairs, report, checks=checks, comparison=comparison)
        err.print(f"wrote {path}")
    if as_json:
        data = result.model_dump(mode="json")
        if comparison:
            data["comparison"] = comparison.model_dump(mode="json")
        if checks is not None:
            data["mapping_check"] = [c.model_dump(mode="json") for c in checks]
        print(json.dumps(data, ensure_ascii=False, indent=1))
        return
    _print_calibration(result, comparison, checks)


def _calibration_inputs(human: Path, bank_path: Path | None):
    from grader.bank.files import load_bank
    from grader.calibrate import question_scales, read_human_scores
    from grader.engine.rubrics import load_rubrics

    humans = read_human_scores(human)
    if bank_path is None:
        return humans, None, None
    bank = load_bank(bank_path)
    rubrics = load_rubrics(bank_path, bank)
    anchors = {qid: {a.id for a in r.anchors} for qid, r in rubrics.items()}
    return humans, question_scales(bank, rubrics), anchors


def _pairing(humans, grades_path: Path, human_path: Path, scales, answers, anchors):
    from grader.calibrate import pair_scores
    from grader.errors import CalibrationError
    from grader.files.grades import read_grades

    if not grades_path.is_file():
        raise CalibrationError("no such grades file", file=grades_path)
    pairing = pair_scores(
        humans,
        read_grades(grades_path),
        human_file=human_path,
        scales=scales,
        answers=answers,
        anchors=anchors,
    )
    if not pairing.pairs:
        raise CalibrationError(
            f"no answer is scored in both {human_path} and this file "
            f"({len(pairing.human_only)} graded by the instructor only, "
            f"{len(pairing.judge_unscored)} not scored by the judge, "
            f"{len(pairing.excluded_anchors)} anchors left out)",
            file=grades_path,
        )
    return pairing


def _estimate(estimate, interval: bool = True) -> str:
    if estimate.value is None:
        return "—"
    text = f"{estimate.value:.3f}"
    if interval and estimate.low is not None:
        text += f" [dim]({estimate.low:.2f}–{estimate.high:.2f})[/]"
    return text


def _agreement_table(
    title: str, first: list[str], rows: list[tuple[list[str], object]], intervals: bool = False
) -> Table:
    from grader.calibrate.metrics import METRIC_LABELS

    table = Table(title=title)
    for column in first:
        table.add_column(column)
    table.add_column("n", justify="right")
    for _, label in METRIC_LABELS:
        table.add_column(label, justify="right")
    for names, figures in rows:
        table.add_row(
            *names,
            str(figures.n),
            *(_estimate(getattr(figures, key), intervals) for key, _ in METRIC_LABELS),
        )
    return table


def _print_calibration(result, comparison, checks) -> None:
    from grader.calibrate.metrics import METRIC_LABELS

    overall = Table(title=f"overall: {result.overall.n} answers scored by both")
    for column in ("", "value", "95 % interval"):
        overall.add_column(column, justify="right" if column else "left")
    for key, label in METRIC_LABELS:
        figure = getattr(result.overall, key)
        interval = "" if figure.low is None else f"{figure.low:.3f} – {figure.high:.3f}"
        overall.add_row(label, _estimate(figure, interval=False), interval)
    console.print(overall)
    for note in result.notes + result.overall.notes:
        console.print(f"[yellow]note:[/] {note}")
    console.print(
        _agreement_table(
            "per question (intervals: --json or --report)",
            ["question"],
            [([q.question_id], q) for q in result.questions],
        )
    )
    if result.criteria:
        console.print(
            _agreement_table(
                "per criterion",
                ["question", "criterion"],
                [([c.question_id, c.criterion_id], c) for c in result.criteria],
            )
        )
    if comparison:
        table = Table(title=f"before and after, on the {comparison.common} answers both scored")
        for column in ("", "before", "after", "change"):
            table.add_column(column, justify="right" if column else "left")
        for key, label in METRIC_LABELS:
            old = getattr(comparison.before.overall, key)
            new = getattr(comparison.after.overall, key)
            change = (
                f"{new.value - old.value:+.3f}"
                if old.value is not None and new.value is not None
                else "—"
            )
            table.add_row(label, _estimate(old), _estimate(new), change)
        console.print(table)
    if checks:
        table = Table(title=f"score mapping, {checks[0].folds}-fold cross-validated (held out)")
        for column in ("question", "MAE raw", "MAE mapped", "QWK raw", "QWK mapped",
                       "exact raw", "exact mapped"):  # fmt: skip
            table.add_column(column, justify="right" if column != "question" else "left")
        for check in checks:
            cells = []
            for key in ("mae", "qwk", "exact"):
                cells += [
                    _estimate(getattr(check.raw, key), interval=False),
                    _estimate(getattr(check.with_mapping, key), interval=False)
                    if check.mapped
                    else "not mapped",
                ]
            table.add_row(check.question_id or "[bold]all[/]", *cells)
        console.print(table)
    if result.disagreements:
        table = Table(title=f"largest disagreements ({len(result.disagreements)})")
        for column in ("submission", "human", "judge", "answer", "judge's evidence"):
            table.add_column(column, overflow="fold")
        for d in result.disagreements:
            evidence = "; ".join(
                f"{c.id} {c.judge:g}/{c.max_points:g}"
                + ("" if c.human is None else f" (human {c.human:g})")
                + (f": “{c.evidence}”" if c.evidence else "")
                for c in d.criteria
            )
            answer = d.answer or ""
            table.add_row(
                f"{d.submission_id} ({d.question_id})",
                f"{d.human:g}",
                f"{d.judge:g}",
                answer[:200] + ("…" if len(answer) > 200 else ""),
                evidence[:300],
            )
        console.print(table)
    unmatched = []
    if result.human_only:
        unmatched.append(f"{len(result.human_only)} graded by the instructor have no grade")
    if result.judge_unscored:
        unmatched.append(f"{len(result.judge_unscored)} the judge did not score")
    if result.excluded_anchors:
        unmatched.append(f"{len(result.excluded_anchors)} anchors left out")
    if unmatched:
        console.print("[yellow]not compared:[/] " + "; ".join(unmatched))


@calibrate_app.command("promote")
def calibrate_promote(
    submission_ids: Annotated[
        list[str], typer.Argument(metavar="SUBMISSION_ID...", help="Graded answers to promote.")
    ],
    bank_path: Annotated[Path, typer.Option("--bank", help="Bank YAML whose rubrics to extend.")],
    human: Annotated[
        Path, typer.Option("--human", help="The instructor's CSV (points per criterion).")
    ],
    submissions: Annotated[
        Path | None,
        typer.Option(help="Submissions JSONL with the answers (or an 'answer' column)."),
    ] = None,
    note: Annotated[str | None, typer.Option(help="Note stored on each new anchor.")] = None,
) -> None:
    """Turn instructor-graded answers into anchors of their rubrics (a new rubric version).

    Needs the instructor's points on every criterion (columns C1, C2, ...) unless the rubric
    has one criterion. Re-grade into a new file, then compare:
    `grader calibrate --human H.csv --grades NEW.jsonl --compare OLD.jsonl --bank BANK`.
    """
    from grader.bank.files import load_bank
    from grader.calibrate import plan_promotions, read_answers, read_human_scores, save_promotions
    from grader.engine.rubrics import load_rubrics
    from grader.errors import CalibrationError

    try:
        bank = load_bank(bank_path)
        rubrics = load_rubrics(bank_path, bank)
        humans = {h.submission_id: h for h in read_human_scores(human)}
        answers = read_answers(submissions) if submissions else {}
        for sid in submission_ids:
            if sid not in humans:
                raise CalibrationError(f"submission {sid!r} is not in the CSV", file=human)
        chosen = [humans[sid] for sid in dict.fromkeys(submission_ids)]
        promotions = plan_promotions(bank, rubrics, chosen, answers, note=note, human_file=human)
    except GraderError as exc:
        raise fail(exc) from exc
    paths = save_promotions(promotions, bank_path, rubrics)  # all checked: nothing half written
    for promotion, path in zip(promotions, paths, strict=True):
        console.print(
            f"{path}: +{promotion.added} anchor(s), version {promotion.before.version} -> "
            f"{promotion.after.version}"
            + ("" if promotion.before.reviewed else " (derived rubric, still reviewed: false)")
        )


@calibrate_app.command("apply")
def calibrate_apply(
    grades: Annotated[Path, typer.Argument(help="Grades JSONL to map.")],
    mapping_path: Annotated[
        Path, typer.Option("--mapping", help="Mapping saved by --save-mapping.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Grades JSONL to write.")],
) -> None:
    """Write grades with mapped scores; the judge's score stays in details.raw_score."""
    from grader.calibrate import apply_mapping, load_mapping
    from grader.errors import CalibrationError
    from grader.files.grades import GradeWriter, read_grades

    try:
        if out.resolve() == grades.resolve():
            raise CalibrationError("--out must be a new file, not the grades it maps", file=out)
        if not grades.is_file():
            raise CalibrationError("no such grades file", file=grades)
        mapping = load_mapping(mapping_path)
        mapped = apply_mapping(read_grades(grades), mapping, source=str(mapping_path))
    except GraderError as exc:
        raise fail(exc) from exc
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.unlink(missing_ok=True)
    with GradeWriter(tmp) as writer:
        writer.write(mapped)
    tmp.replace(out)
    changed = sum("score_mapping" in g.provenance for g in mapped)
    console.print(
        f"wrote {out}: {len(mapped)} grades, {changed} mapped (version {mapping.version})"
    )
