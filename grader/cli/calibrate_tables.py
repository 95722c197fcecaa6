"""``grader calibrate``'s report on the terminal: rich tables of the agreement figures."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from grader.calibrate.metrics import METRIC_LABELS, Agreement
from grader.cli.app import console


def print_calibration(result, comparison, checks) -> None:
    """Overall and per-question figures, then whatever else the run computed."""
    overall = Table(title=f"overall: {result.overall.n} answers scored by both")
    for column in ("", "value", "95 % interval"):
        overall.add_column(column, justify="right" if column else "left")
    for key, label in METRIC_LABELS:
        figure = getattr(result.overall, key)
        interval = "" if figure.low is None else f"{figure.low:.3f} – {figure.high:.3f}"
        overall.add_row(label, _estimate(figure, interval=False), interval)
    console.print(overall)
    for note in result.notes + result.overall.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
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
        console.print(_comparison_table(comparison))
    if checks:
        console.print(_mapping_table(checks))
    if result.disagreements:
        console.print(_disagreement_table(result.disagreements))
    unmatched = []
    if result.human_only:
        unmatched.append(f"{len(result.human_only)} graded by the instructor have no grade")
    if result.judge_unscored:
        unmatched.append(f"{len(result.judge_unscored)} the judge did not score")
    if result.excluded_anchors:
        unmatched.append(f"{len(result.excluded_anchors)} anchors left out")
    if unmatched:
        console.print("[yellow]not compared:[/] " + "; ".join(unmatched))


def print_refit(refit) -> None:
    """A refit's report: before and after overall, then per question, then the bands."""
    comparison = refit.comparison
    console.print(
        _comparison_table(
            comparison,
            f"BEFORE (the grades as they are) and AFTER (the refit, {refit.folds} folds, whole "
            f"questions held out): {refit.answers} answers on {refit.questions} questions",
        )
    )
    first = refit.stage1
    console.print(
        f"the refit's first stage alone (no graded neighbours): MAE {_estimate(first.mae)}, "
        f"Pearson {_estimate(first.pearson)}, QWK {_estimate(first.qwk)}"
    )
    table = Table(title="per question, held out")
    for column in ("question", "n", "MAE before", "MAE after", "Pearson before", "Pearson after"):
        table.add_column(column, justify="left" if column == "question" else "right")
    for before, after in zip(comparison.before.questions, comparison.after.questions, strict=True):
        table.add_row(
            escape(before.question_id),
            str(before.n),
            _estimate(before.mae, interval=False),
            _estimate(after.mae, interval=False),
            _estimate(before.pearson, interval=False),
            _estimate(after.pearson, interval=False),
        )
    console.print(table)
    if refit.bands:
        bands = Table(title="second stage: the bands that lean on your graded answers")
        for column in ("graded answers", "answers", "questions", "MAE refit", "MAE base", "kept"):
            bands.add_column(column, justify="right" if column != "kept" else "left")
        for b in refit.bands:
            bands.add_row(
                f"{b.min_graded}+", str(b.answers), str(b.questions),
                "—" if b.refit_mae is None else f"{b.refit_mae:.3f}",
                "—" if b.base_mae is None else f"{b.base_mae:.3f}",
                escape(f"{b.kept}: {b.why}"),
            )  # fmt: skip
        console.print(bands)
    for note in refit.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")


def _comparison_table(comparison, title: str | None = None) -> Table:
    table = Table(
        title=title or f"before and after, on the {comparison.common} answers both scored"
    )
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
    return table


def _mapping_table(checks) -> Table:
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
        table.add_row(escape(check.question_id) if check.question_id else "[bold]all[/]", *cells)
    return table


def _disagreement_table(disagreements) -> Table:
    table = Table(title=f"largest disagreements ({len(disagreements)})")
    for column in ("submission", "human", "judge", "answer", "judge's evidence"):
        table.add_column(column, overflow="fold")
    for d in disagreements:
        evidence = "; ".join(
            f"{c.id} {c.judge:g}/{c.max_points:g}"
            + ("" if c.human is None else f" (human {c.human:g})")
            + (f": “{c.evidence}”" if c.evidence else "")
            for c in d.criteria
        )
        answer = d.answer or ""
        table.add_row(
            escape(f"{d.submission_id} ({d.question_id})"),
            f"{d.human:g}",
            f"{d.judge:g}",
            escape(answer[:200] + ("…" if len(answer) > 200 else "")),
            escape(evidence[:300]),
        )
    return table


def _estimate(estimate, interval: bool = True) -> str:
    if estimate.value is None:
        return "—"
    text = f"{estimate.value:.3f}"
    if interval and estimate.low is not None:
        text += f" [dim]({estimate.low:.2f}–{estimate.high:.2f})[/]"
    return text


def _agreement_table(
    title: str, first: list[str], rows: list[tuple[list[str], Agreement]], intervals: bool = False
) -> Table:
    table = Table(title=title)
    for column in first:
        table.add_column(column)  # the column names are ours; the cells are the user's
    table.add_column("n", justify="right")
    for _, label in METRIC_LABELS:
        table.add_column(label, justify="right")
    for names, figures in rows:
        table.add_row(
            *(escape(name) for name in names),
            str(figures.n),
            *(_estimate(getattr(figures, key), intervals) for key, _ in METRIC_LABELS),
        )
    return table
