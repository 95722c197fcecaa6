"""The ``grader`` command line: import papers, inspect banks, grade submissions files."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from grader.errors import GraderError

app = typer.Typer(
    help="Grade exam answers: objective questions exactly, essays against rubrics.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
bank_app = typer.Typer(
    help="Import exam papers into question banks and inspect them.", no_args_is_help=True
)
app.add_typer(bank_app, name="bank")
rubric_app = typer.Typer(help="Check rubric files and draft new ones.", no_args_is_help=True)
app.add_typer(rubric_app, name="rubric")

console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _fail(exc: GraderError) -> typer.Exit:
    err.print(f"[bold red]error:[/] {exc}")
    return typer.Exit(code=2)


@bank_app.command("import")
def bank_import(
    papers: Annotated[list[Path], typer.Argument(help="Exam paper text files (UTF-8 or GB18030).")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Bank YAML to write, e.g. rubrics/NAME.yaml.")
    ],
    name: Annotated[
        str | None, typer.Option(help="Bank name (default: the output file's stem).")
    ] = None,
    strict: Annotated[
        bool, typer.Option(help="Fail on any warning instead of listing it.")
    ] = False,
) -> None:
    """Read exam papers (sections, questions, options, answers, explanations) into a bank."""
    from grader.bank.files import import_papers, save_bank

    try:
        bank, warnings = import_papers(papers, name or out.stem)
    except GraderError as exc:
        raise _fail(exc) from exc
    for warning in warnings:
        err.print(f"[yellow]warning:[/] {warning}")
    if strict and warnings:
        err.print(f"[bold red]error:[/] {len(warnings)} warning(s) and --strict: nothing written")
        raise typer.Exit(code=1)
    save_bank(bank, out)
    counts: dict[str, int] = defaultdict(int)
    for q in bank.questions:
        counts[q.type.value] += 1
    summary = ", ".join(f"{n} {t}" for t, n in counts.items())
    console.print(
        f"wrote {out}: {len(bank.questions)} questions ({summary}), {len(warnings)} warning(s)"
    )


@bank_app.command("show")
def bank_show(
    bank_path: Annotated[Path, typer.Argument(metavar="BANK", help="Bank YAML file.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the questions as a JSON list.")
    ] = False,
) -> None:
    """Show a bank's questions as a table, or as JSON for other tools."""
    from grader.bank.files import load_bank

    try:
        bank = load_bank(bank_path)
    except GraderError as exc:
        raise _fail(exc) from exc
    if as_json:
        print(
            json.dumps(
                [q.model_dump(mode="json") for q in bank.questions], ensure_ascii=False, indent=1
            )
        )
        return
    table = Table(title=f"{bank.name} — {len(bank.questions)} questions", show_lines=False)
    for column in ("id", "no.", "type", "pts", "stem", "answer"):
        table.add_column(column, overflow="fold" if column == "stem" else "ellipsis")
    for q in bank.questions:
        answer = q.answer if not isinstance(q.answer, bool) else ("√" if q.answer else "×")
        flag = " [red](incomplete)[/]" if q.incomplete else ""
        table.add_row(
            q.id,
            q.number,
            q.type.value,
            "" if q.points is None else f"{q.points:g}",
            q.stem[:80] + ("…" if len(q.stem) > 80 else ""),
            ("" if answer is None else str(answer)[:30]) + flag,
        )
    console.print(table)


@app.command()
def grade(
    submissions: Annotated[
        Path, typer.Argument(help="JSONL: {id, question_id | question, answer, student?} per line.")
    ],
    bank_path: Annotated[
        Path, typer.Option("--bank", "-b", help="Bank YAML the submissions answer.")
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Grades JSONL (appended; reruns skip graded ids).")
    ],
    judge: Annotated[
        str | None,
        typer.Option(
            help="Judge backend: vllm (embedded default), openai, scripted, none. "
            "Default: GRADER_JUDGE or vllm."
        ),
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Submissions per grading batch.")] = 64,
    embed_model: Annotated[
        str | None,
        typer.Option(
            help="Answer embeddings for off-topic, duplicate, coverage and group signals: "
            "a packaged model, a sentence-transformers folder, or 'none'. "
            "Default: GRADER_EMBED_MODEL or multilingual-e5-small."
        ),
    ] = None,
) -> None:
    """Grade a submissions file into a grades file, resumably, with a summary at the end.

    Objective questions are graded exactly; the judge and the embedding model are loaded only
    when there are subjective answers to grade. Blank and off-topic answers score 0 without
    the judge; off-topic ones and near-duplicates go to the review queue.
    """
    from grader.bank.files import load_bank
    from grader.config import Settings
    from grader.embed import make_embedder
    from grader.gradebook import GradeWriter, read_grades
    from grader.judge import make_judge
    from grader.pipeline import Pipeline
    from grader.rubrics import load_rubrics
    from grader.submissions import read_submissions

    try:
        overrides = {"judge": judge, "embed_model": embed_model}
        settings = Settings(**{k: v for k, v in overrides.items() if v})
        bank = load_bank(bank_path)
        rubrics = load_rubrics(bank_path, bank)
        pending = read_submissions(submissions, bank)
        # A grade left unscored because the judge was unreachable is tried again.
        done = {g.submission_id for g in read_grades(out) if not _retryable(g)}
    except GraderError as exc:
        raise _fail(exc) from exc
    except ValueError as exc:  # settings validation
        err.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(code=2) from exc
    todo = [s for s in pending if s.id not in done]
    if done:
        console.print(
            f"{len(pending) - len(todo)} of {len(pending)} already graded in {out}, skipping them"
        )
    subjective = [s for s in todo if not bank.get(s.question_id).type.objective]
    # Grouped by question, so each batch's answers share rubric prefixes.
    subjective.sort(key=lambda s: s.question_id)
    try:
        embedder = make_embedder(settings, progress=err.print) if subjective else None
        if subjective and settings.judge != "none":
            err.print(
                f"loading the {settings.judge} judge ({settings.judge_model}) "
                f"for {len(subjective)} subjective answer(s)…"
            )
        judge_backend = make_judge(settings) if subjective else None
    except GraderError as exc:
        raise _fail(exc) from exc
    pipeline = Pipeline(bank, rubrics, judge_backend, settings, embedder)
    # Off-topic, duplicate and group signals compare each answer with the whole file's
    # answers to its question, graded before or not.
    cohort = [s for s in pending if not bank.get(s.question_id).type.objective]
    try:
        with (
            GradeWriter(out) as writer,
            Progress(
                TextColumn("grading"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=err,
            ) as progress,
        ):
            task = progress.add_task("grading", total=len(todo))
            # Objective answers first (instant), then the judge's work in batches.
            ordered = [s for s in todo if s not in subjective] + subjective
            for start in range(0, len(ordered), batch_size):
                batch = ordered[start : start + batch_size]
                writer.write(pipeline.grade_many(batch, cohort))
                progress.advance(task, len(batch))
    finally:
        if judge_backend is not None:
            judge_backend.close()
    _summary(read_grades(out), {s.id for s in pending})


def _load_exam(bank_path: Path, submissions: Path, embed_model: str | None):
    """Bank, its submissions, settings and embedder for the commands that compare answers."""
    from grader.bank.files import load_bank
    from grader.config import Settings
    from grader.embed import make_embedder
    from grader.submissions import read_submissions

    try:
        settings = Settings(**({"embed_model": embed_model} if embed_model else {}))
        bank = load_bank(bank_path)
        pending = read_submissions(submissions, bank)
        embedder = make_embedder(settings, progress=err.print)
    except GraderError as exc:
        raise _fail(exc) from exc
    except ValueError as exc:  # settings validation
        err.print(f"[bold red]error:[/] {exc}")
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
    from grader.cohort import group_answers

    bank, pending, settings, embedder = _load_exam(bank_path, submissions, embed_model)
    question = bank.get(question_id)
    if question is None:
        err.print(f"[bold red]error:[/] no question {question_id!r} in {bank_path}")
        raise typer.Exit(code=2)
    from grader.signals import blank_reason

    mine = sorted((s for s in pending if s.question_id == question_id), key=lambda s: s.id)
    if not mine:
        err.print(f"[bold red]error:[/] {submissions} has no answers to {question_id}")
        raise typer.Exit(code=2)
    answers = [s for s in mine if blank_reason(s.answer, settings.min_answer_chars) is None]
    if len(answers) < len(mine):
        err.print(f"{len(mine) - len(answers)} blank or non-answer(s) left out of the groups")
    try:
        vectors = embedder.encode([s.answer for s in answers])
    except GraderError as exc:
        raise _fail(exc) from exc
    found = group_answers(vectors, settings.group_cosine if threshold is None else threshold)
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
    table = Table(title=f"{question_id}: {len(answers)} answers in {len(found)} groups")
    for column in ("group", "size", "cohesion", "representative answer", "members"):
        table.add_column(column, overflow="fold")
    for g in found:
        rep = answers[g.representative]
        members = [answers[m].id for m in g.members]
        table.add_row(
            g.id,
            str(g.size),
            f"{g.cohesion:.3f}",
            f"[{rep.id}] " + rep.answer[:120] + ("…" if len(rep.answer) > 120 else ""),
            ", ".join(members[:8]) + (f" … +{len(members) - 8}" if len(members) > 8 else ""),
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
    from grader.integrity import suspect_pairs, write_report

    bank, pending, settings, embedder = _load_exam(bank_path, submissions, embed_model)
    if threshold is not None:
        settings = settings.model_copy(update={"duplicate_cosine": threshold})
    try:
        pairs = suspect_pairs(bank, pending, embedder, settings)
    except GraderError as exc:
        raise _fail(exc) from exc
    write_report(pairs, out, bank=bank, source=submissions, settings=settings, answers=len(pending))
    if as_json:
        for pair in pairs:
            print(json.dumps(pair.as_json(), ensure_ascii=False))
    table = Table(title=f"near-duplicate pairs: {len(pairs)}")
    for column in ("question", "similarity", "students", "first answer"):
        table.add_column(column, overflow="fold")
    for p in pairs[:20]:
        table.add_row(
            p.question_id,
            f"{p.similarity:.3f}",
            f"{p.first.student or p.first.id} / {p.second.student or p.second.id}",
            p.first.answer[:80] + ("…" if len(p.first.answer) > 80 else ""),
        )
    (err if as_json else console).print(table)
    (err if as_json else console).print(f"report: {out}")


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
    from grader.rubrics import load_rubric, rubric_dir

    paths = banks or sorted(Path("rubrics").glob("*.yaml"))
    if not paths:
        err.print("[bold red]error:[/] no bank files given and none in rubrics/")
        raise typer.Exit(code=2)
    failures = 0
    table = Table(title="rubrics")
    for column in ("question", "type", "points", "rubric", "version"):
        table.add_column(column)
    for bank_path in paths:
        try:
            bank = load_bank(bank_path)
        except GraderError as exc:
            raise _fail(exc) from exc
        folder = rubric_dir(bank_path)
        files = {p.stem: p for p in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}
        for stem in sorted(files.keys() - {q.id for q in bank.questions}):
            failures += 1
            err.print(f"[red]invalid:[/] {files[stem]}: no question {stem!r} in {bank_path}")
        for q in bank.questions:
            if q.type.objective:
                continue
            if q.id not in files:
                table.add_row(
                    q.id, q.type.value, f"{q.points or ''}", "[yellow]none: derived[/]", ""
                )
                continue
            try:
                rubric = load_rubric(files[q.id], bank)
            except GraderError as exc:
                failures += 1
                err.print(f"[red]invalid:[/] {exc}")
                table.add_row(q.id, q.type.value, f"{q.points or ''}", "[red]invalid[/]", "")
                continue
            state = "ok" if rubric.reviewed else "[yellow]ok, unreviewed[/]"
            table.add_row(q.id, q.type.value, f"{rubric.points:g}", state, rubric.version)
    console.print(table)
    if failures:
        raise typer.Exit(code=1)


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
    from grader.config import Settings
    from grader.draft import draft_rubric
    from grader.judge import make_judge
    from grader.rubrics import rubric_dir, save_rubric

    try:
        settings = Settings(**({"judge": judge} if judge else {}))
        bank = load_bank(bank_path)
    except GraderError as exc:
        raise _fail(exc) from exc
    question = bank.get(question_id)
    if question is None or question.type.objective:
        err.print(
            f"[bold red]error:[/] {question_id!r} is not a subjective question of {bank_path}"
        )
        raise typer.Exit(code=2)
    target = rubric_dir(bank_path) / f"{question_id}.yaml"
    if target.exists() and not force:
        err.print(f"[bold red]error:[/] {target} exists; use --force to overwrite")
        raise typer.Exit(code=2)
    backend = make_judge(settings)
    if backend is None:
        err.print("[bold red]error:[/] drafting needs a judge; GRADER_JUDGE is 'none'")
        raise typer.Exit(code=2)
    try:
        rubric = draft_rubric(question, backend)
    except GraderError as exc:
        raise _fail(exc) from exc
    finally:
        backend.close()
    path = save_rubric(rubric, rubric_dir(bank_path))
    console.print(
        f"wrote {path} ({len(rubric.criteria)} criteria, reviewed: false) — edit it, "
        "then run `grader rubric check`"
    )


# --- calibration -----------------------------------------------------------------------------

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
        raise _fail(exc) from exc
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
    from grader.rubrics import load_rubrics

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
    from grader.gradebook import read_grades

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
    from grader.calibrate import promote_anchors, read_answers, read_human_scores
    from grader.errors import CalibrationError
    from grader.rubrics import derive_rubric, load_rubrics, rubric_dir, rubric_problems, save_rubric

    try:
        bank = load_bank(bank_path)
        rubrics = load_rubrics(bank_path, bank)
        humans = {h.submission_id: h for h in read_human_scores(human)}
        answers = read_answers(submissions) if submissions else {}
        by_question: dict[str, list] = defaultdict(list)
        for sid in dict.fromkeys(submission_ids):
            if sid not in humans:
                raise CalibrationError(f"submission {sid!r} is not in the CSV", file=human)
            by_question[humans[sid].question_id].append(humans[sid])
        updated = []
        for qid, items in by_question.items():
            question = bank.get(qid)
            if question is None or question.type.objective:
                raise CalibrationError(
                    f"{qid!r} is not a subjective question of {bank_path}",
                    file=human,
                    line=items[0].line,
                )
            rubric = rubrics.get(qid) or derive_rubric(question)
            promoted = promote_anchors(rubric, items, answers, note=note, human_file=human)
            problems = rubric_problems(promoted, question)
            if problems:
                raise CalibrationError("; ".join(problems), file=human, line=items[0].line)
            updated.append((rubric, promoted))
    except GraderError as exc:
        raise _fail(exc) from exc
    for rubric, promoted in updated:  # all checked first: nothing is half written
        path = save_rubric(promoted, rubric_dir(bank_path))
        added = len(promoted.anchors) - len(rubric.anchors)
        console.print(
            f"{path}: +{added} anchor(s), version {rubric.version} -> {promoted.version}"
            + ("" if rubric.reviewed else " (derived rubric, still reviewed: false)")
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
    from grader.gradebook import GradeWriter, read_grades

    try:
        if out.resolve() == grades.resolve():
            raise CalibrationError("--out must be a new file, not the grades it maps", file=out)
        if not grades.is_file():
            raise CalibrationError("no such grades file", file=grades)
        mapping = load_mapping(mapping_path)
        mapped = apply_mapping(read_grades(grades), mapping, source=str(mapping_path))
    except GraderError as exc:
        raise _fail(exc) from exc
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.unlink(missing_ok=True)
    with GradeWriter(tmp) as writer:
        writer.write(mapped)
    tmp.replace(out)
    changed = sum("score_mapping" in g.provenance for g in mapped)
    console.print(
        f"wrote {out}: {len(mapped)} grades, {changed} mapped (version {mapping.version})"
    )


def _retryable(grade) -> bool:
    return any(r.code == "judge_unavailable" for r in grade.review_reasons)


def _summary(grades: list, submission_ids: set[str]) -> None:
    latest = {g.submission_id: g for g in grades if g.submission_id in submission_ids}
    grades = list(latest.values())  # a retried submission: its last record counts
    by_question: dict[str, list] = defaultdict(list)
    by_student: dict[str, list] = defaultdict(list)
    for g in grades:
        by_question[g.question_id].append(g)
        by_student[g.student or "(anonymous)"].append(g)

    table = Table(title="per question")
    for column in ("question", "answers", "graded", "mean", "max", "not graded", "review"):
        table.add_column(column, justify="right" if column != "question" else "left")
    for qid, items in by_question.items():
        scored = [g for g in items if g.score is not None]
        mean = sum(g.score for g in scored) / len(scored) if scored else None
        table.add_row(
            qid,
            str(len(items)),
            str(len(scored)),
            "" if mean is None else f"{mean:.2f}",
            "" if items[0].max_score is None else f"{items[0].max_score:g}",
            str(len(items) - len(scored)),
            str(sum(g.needs_review for g in items)),
        )
    console.print(table)

    table = Table(title="per student")
    for column in ("student", "answers", "score", "of", "not graded"):
        table.add_column(column, justify="right" if column != "student" else "left")
    for student, items in sorted(by_student.items()):
        scored = [g for g in items if g.score is not None]
        table.add_row(
            student,
            str(len(items)),
            f"{sum(g.score for g in scored):g}",
            f"{sum(g.max_score or 0 for g in scored):g}",
            str(len(items) - len(scored)),
        )
    console.print(table)
    flagged = [g for g in grades if g.needs_review]
    if flagged:
        table = Table(title=f"needs review ({len(flagged)}; first 10)")
        for column in ("submission", "score", "why"):
            table.add_column(column, overflow="fold")
        for g in flagged[:10]:
            score = "—" if g.score is None else f"{g.score:g}/{g.max_score:g}"
            table.add_row(
                g.submission_id, score, "; ".join(r.message for r in g.review_reasons)[:160]
            )
        console.print(table)
    statuses: dict[str, int] = defaultdict(int)
    for g in grades:
        statuses[g.status.value] += 1
    console.print("status: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())))


def main() -> None:
    app()


# --- the grading service -------------------------------------------------------------------

platform_app = typer.Typer(help="Platforms that post to the grading service.", no_args_is_help=True)
app.add_typer(platform_app, name="platform")
db_app = typer.Typer(help="The service's database.", no_args_is_help=True)
app.add_typer(db_app, name="db")


def _store():
    from grader.config import Settings
    from grader.store import Store

    store = Store(Settings().database_url)
    store.migrate()
    return store


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Create or migrate the schema of GRADER_DATABASE_URL to the newest version."""
    from grader.config import Settings

    _store()
    console.print(f"database at the newest schema: {Settings().database_url}")


@platform_app.command("add")
def platform_add(
    name: Annotated[str, typer.Argument(help="The platform's name, unique.")],
    exam: Annotated[
        list[str], typer.Option("--exam", help="An exam (bank name) it may post to; repeat.")
    ],
    webhook_url: Annotated[
        str | None, typer.Option(help="Where to POST each grade, signed.")
    ] = None,
) -> None:
    """Register a platform; prints its API key and webhook secret once (only a hash is kept)."""
    from grader.api.keys import new_key
    from grader.webhooks import new_secret

    store = _store()
    if store.platform_by_name(name) is not None:
        err.print(f"[bold red]error:[/] platform {name!r} exists")
        raise typer.Exit(code=2)
    served = _served_exams()
    for name in sorted(set(exam) - served):
        err.print(
            f"[yellow]warning:[/] exam {name!r} is not among the banks served ({', '.join(sorted(served))})"
        )
    key, secret = new_key(), new_secret()
    store.add_platform(name, exam, key.key_id, key.key_hash, secret, webhook_url)
    console.print(f"platform {name} may post to: {', '.join(sorted(set(exam)))}")
    print(f"api_key={key.key}")
    print(f"webhook_secret={secret}")


def _served_exams() -> set[str]:
    from grader.bank.files import load_bank
    from grader.config import Settings

    return {load_bank(path).name for path in Settings().banks if Path(path).exists()}


@platform_app.command("list")
def platform_list() -> None:
    """Platforms, their exams and webhook URLs (never keys)."""
    table = Table(title="platforms")
    for column in ("name", "exams", "webhook"):
        table.add_column(column)
    for p in _store().list_platforms():
        table.add_row(p.name, ", ".join(sorted(p.exams)), p.webhook_url or "")
    console.print(table)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8080,
    inline: Annotated[
        bool, typer.Option(help="Grade in this process (no Redis, no workers).")
    ] = False,
) -> None:
    """Run the HTTP intake (OpenAPI docs at /docs). Grading: workers on Redis, or --inline."""
    import uvicorn

    from grader.api.app import create_app
    from grader.api.dispatch import CeleryDispatcher, InlineDispatcher
    from grader.config import Settings
    from grader.exams import Graders, load_exams

    settings = Settings()
    store = _store()
    try:
        if inline:
            graders = Graders.load(settings)
            exams, dispatcher = graders.exams, InlineDispatcher(settings, store, graders)
        else:
            exams, dispatcher = load_exams(settings.banks), CeleryDispatcher(settings)
    except GraderError as exc:
        raise _fail(exc) from exc
    err.print(f"serving exams: {', '.join(sorted(exams))} ({'inline' if inline else 'workers'})")
    try:
        uvicorn.run(create_app(settings, store, exams, dispatcher), host=host, port=port)
    finally:
        dispatcher.close()


@app.command()
def worker(
    queues: Annotated[
        str, typer.Option(help="grade (the judge), io (webhooks), or both: grade,io.")
    ] = "grade,io",
    concurrency: Annotated[
        int | None,
        typer.Option(
            help="Pool processes. Default: 1 with a model judge (one engine per process; run "
            "one worker per GPU), the CPU count otherwise."
        ),
    ] = None,
    pool: Annotated[str, typer.Option(help="Celery pool: prefork or solo.")] = "prefork",
    loglevel: Annotated[str, typer.Option(help="Log level.")] = "INFO",
) -> None:
    """Start a Celery worker on GRADER_REDIS_URL with the service's defaults."""
    import os

    from grader.config import Settings

    settings = Settings()
    if concurrency is None:
        concurrency = 1 if settings.judge == "vllm" else (os.cpu_count() or 1)
    os.environ["GRADER_WORKER_LOADS_JUDGE"] = "1" if "grade" in queues.split(",") else "0"
    from workers.app import app as celery_app

    celery_app.worker_main(
        [
            "worker",
            "-Q",
            queues,
            "-c",
            str(concurrency),
            "-P",
            pool,
            "--loglevel",
            loglevel,
            "--without-mingle",
            "--without-gossip",
        ]
    )


# --- instructors ---------------------------------------------------------------------------

instructor_app = typer.Typer(help="Instructors who use the web pages.", no_args_is_help=True)
app.add_typer(instructor_app, name="instructor")


@instructor_app.command("add")
def instructor_add(
    name: Annotated[str, typer.Argument(help="The instructor's name, unique.")],
    exam: Annotated[
        list[str], typer.Option("--exam", help="An exam (bank name) they grade; repeat.")
    ],
) -> None:
    """Register an instructor; prints their login key once (only a hash is kept)."""
    from grader.api.keys import INSTRUCTOR_PREFIX, new_key

    store = _store()
    if store.instructor(name=name) is not None:
        err.print(f"[bold red]error:[/] instructor {name!r} exists")
        raise typer.Exit(code=2)
    served = _served_exams()
    for unknown in sorted(set(exam) - served):
        err.print(
            f"[yellow]warning:[/] exam {unknown!r} is not among the banks served ({', '.join(sorted(served))})"
        )
    key = new_key(INSTRUCTOR_PREFIX)
    store.add_instructor(name, exam, key.key_id, key.key_hash)
    console.print(f"instructor {name} grades: {', '.join(sorted(set(exam)))}")
    print(f"instructor_key={key.key}")


@instructor_app.command("list")
def instructor_list() -> None:
    """Instructors and their exams (never keys)."""
    table = Table(title="instructors")
    for column in ("name", "exams"):
        table.add_column(column)
    for i in _store().list_instructors():
        table.add_row(i.name, ", ".join(sorted(i.exams)))
    console.print(table)
