"""``grader calibrate``: the judge against an instructor's grades; anchors; score mapping.

The root command's options come in groups (see ``--help``): the inputs, what to write, the
statistics, a comparison with an earlier run, and a score mapping. Each group is read into one
small value, so the work is done by functions that take a group, not fourteen loose options.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from grader.cli.app import app, console, err, fail
from grader.errors import GraderError

calibrate_app = typer.Typer(
    help="Check the judge against an instructor's grades; promote anchors; map scores."
)
app.add_typer(calibrate_app, name="calibrate")

_INPUTS, _OUTPUT, _STATISTICS = "Inputs", "Output", "Statistics"
_COMPARE, _MAPPING = "Compare with an earlier run", "Score mapping"


@dataclass(frozen=True)
class Inputs:
    human: Path
    grades: Path
    bank: Path | None
    submissions: Path | None


@dataclass(frozen=True)
class Output:
    report: Path | None
    as_json: bool
    top: int


@dataclass(frozen=True)
class Statistics:
    bootstrap: int
    seed: int


@dataclass(frozen=True)
class Mapping:
    learn: bool  # cross-validate a per-question mapping
    save: Path | None  # and keep it for `grader calibrate apply`
    folds: int


# The root command's options, by group.
_Human = Annotated[
    Path | None,
    typer.Option(
        "--human",
        help="CSV: submission_id, question_id, score; optional answer, note and one "
        "column per criterion id (C1, C2, ...).",
        rich_help_panel=_INPUTS,
    ),
]
_Grades = Annotated[
    Path | None,
    typer.Option(
        "--grades", help="Grades JSONL written by `grader grade`.", rich_help_panel=_INPUTS
    ),
]
_Bank = Annotated[
    Path | None,
    typer.Option(
        "--bank",
        help="Bank YAML: point scales from the bank and its rubrics (default: the grades' "
        "max_score); answers that are anchors of their rubric are left out.",
        rich_help_panel=_INPUTS,
    ),
]
_Submissions = Annotated[
    Path | None,
    typer.Option(
        help="Submissions JSONL: shows the answers and catches unknown ids.",
        rich_help_panel=_INPUTS,
    ),
]
_Report = Annotated[
    Path | None,
    typer.Option(
        help="Write an HTML report with PNG plots into this folder.", rich_help_panel=_OUTPUT
    ),
]
_Json = Annotated[
    bool, typer.Option("--json", help="Print the figures as JSON.", rich_help_panel=_OUTPUT)
]
_Top = Annotated[
    int, typer.Option(min=0, help="Largest disagreements to list.", rich_help_panel=_OUTPUT)
]
_Compare = Annotated[
    Path | None,
    typer.Option(
        "--compare",
        help="Earlier grades JSONL: agreement before and after, side by side, on the "
        "answers both runs scored.",
        rich_help_panel=_COMPARE,
    ),
]
_LearnMapping = Annotated[
    bool,
    typer.Option(
        "--mapping",
        help="Learn a per-question isotonic score mapping; report it cross-validated.",
        rich_help_panel=_MAPPING,
    ),
]
_SaveMapping = Annotated[
    Path | None,
    typer.Option(
        help="Save the mapping (JSON) for `grader calibrate apply`; implies --mapping. "
        "Questions where it does not lower the cross-validated MAE keep the judge's scores.",
        rich_help_panel=_MAPPING,
    ),
]
_Folds = Annotated[
    int,
    typer.Option(min=2, help="Cross-validation folds for --mapping.", rich_help_panel=_MAPPING),
]
_Bootstrap = Annotated[
    int,
    typer.Option(
        min=0,
        help="Bootstrap resamples for 95 % intervals (0: none).",
        rich_help_panel=_STATISTICS,
    ),
]
_Seed = Annotated[
    int, typer.Option(help="Seed of the bootstrap and the folds.", rich_help_panel=_STATISTICS)
]


@calibrate_app.callback(invoke_without_command=True)
def calibrate_run(
    ctx: typer.Context,
    human: _Human = None,
    grades: _Grades = None,
    bank_path: _Bank = None,
    submissions: _Submissions = None,
    report: _Report = None,
    as_json: _Json = False,
    compare_with: _Compare = None,
    mapping: _LearnMapping = False,
    save_mapping: _SaveMapping = None,
    folds: _Folds = 5,
    top: _Top = 10,
    bootstrap: _Bootstrap = 1000,
    seed: _Seed = 0,
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
    _calibrate(
        Inputs(human, grades, bank_path, submissions),
        Output(report, as_json, top),
        Statistics(bootstrap, seed),
        compare_with,
        Mapping(mapping or save_mapping is not None, save_mapping, folds),
    )


def _calibrate(
    inputs: Inputs, output: Output, stats: Statistics, before: Path | None, mapping: Mapping
) -> None:
    from grader.calibrate import calibrate, compare, read_answers

    try:
        humans, scales, anchors = calibration_inputs(inputs.human, inputs.bank)
        answers = read_answers(inputs.submissions) if inputs.submissions else None
        pairing = pairing_of(humans, inputs.grades, inputs.human, scales, answers, anchors)
        earlier = (
            pairing_of(humans, before, inputs.human, scales, answers, anchors) if before else None
        )
    except GraderError as exc:
        raise fail(exc) from exc
    result = calibrate(pairing, top=output.top, bootstrap=stats.bootstrap, seed=stats.seed)
    comparison = (
        compare(earlier, pairing, top=output.top, bootstrap=stats.bootstrap, seed=stats.seed)
        if earlier
        else None
    )
    checks = _mapping_checks(pairing, mapping, stats.seed) if mapping.learn else None
    _write(result, pairing, comparison, checks, output)


def _mapping_checks(pairing, mapping: Mapping, seed: int):
    """The mapping cross-validated, and saved when asked."""
    from grader.calibrate import cross_validate, fit_mapping, save_mapping

    checks = cross_validate(pairing.pairs, folds=mapping.folds, seed=seed)
    if mapping.save:
        learned = fit_mapping(pairing.pairs, checks=checks)
        save_mapping(learned, mapping.save)
        err.print(
            f"wrote {escape(str(mapping.save))}: mappings for {len(learned.questions)} question(s), "
            f"{len(learned.skipped)} left as the judge scored them"
        )
    return checks


def _write(result, pairing, comparison, checks, output: Output) -> None:
    """The HTML report when asked, then JSON or the tables."""
    if output.report:
        from grader.calibrate.report import write_report

        path = write_report(
            result, pairing.pairs, output.report, checks=checks, comparison=comparison
        )
        err.print(f"wrote {escape(str(path))}")
    if output.as_json:
        data = result.model_dump(mode="json")
        if comparison:
            data["comparison"] = comparison.model_dump(mode="json")
        if checks is not None:
            data["mapping_check"] = [c.model_dump(mode="json") for c in checks]
        print(json.dumps(data, ensure_ascii=False, indent=1))
        return
    from grader.cli.calibrate_tables import print_calibration

    print_calibration(result, comparison, checks)


def calibration_inputs(human: Path, bank_path: Path | None):
    """The instructor's scores; with a bank, its point scales and each rubric's anchors."""
    from grader.bank.files import load_bank
    from grader.calibrate import question_scales, read_human_scores
    from grader.engine.reading.rubrics import load_rubrics

    humans = read_human_scores(human)
    if bank_path is None:
        return humans, None, None
    bank = load_bank(bank_path)
    rubrics = load_rubrics(bank_path, bank)
    anchors = {qid: {a.id for a in r.anchors} for qid, r in rubrics.items()}
    return humans, question_scales(bank, rubrics), anchors


def pairing_of(humans, grades_path: Path, human_path: Path, scales, answers, anchors):
    """The scores paired with a grades file's; a CalibrationError when none pair."""
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
    from grader.engine.reading.rubrics import load_rubrics
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
            escape(
                f"{path}: +{promotion.added} anchor(s), version {promotion.before.version} -> "
                f"{promotion.after.version}"
            )
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
    changed = sum(g.provenance.score_mapping is not None for g in mapped)
    console.print(
        f"wrote {escape(str(out))}: {len(mapped)} grades, {changed} mapped "
        f"(version {escape(str(mapping.version))})"
    )
