"""The calibration report: one self-contained ``index.html`` with PNG plots next to it.

Plots (matplotlib, Agg backend, no display needed): judge-vs-instructor heatmaps overall and
per question (small multiples, 20 to a page), the two score distributions, and agreement bars
per question and per criterion. Student answers are untrusted text: the HTML template escapes
everything (autoescape), and the page loads nothing from the network.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np
from jinja2 import Environment, StrictUndefined

from grader.calibrate.mapping import MappingCheck
from grader.calibrate.metrics import METRIC_LABELS, Agreement, to_labels
from grader.calibrate.summary import Calibration, Comparison
from grader.calibrate.tables import ScorePair, question_order

PER_PAGE = 20  # heatmaps per PNG page
MAX_PAGES = 10  # beyond 200 questions, the per-question table still lists them all


def write_report(
    calibration: Calibration,
    pairs: list[ScorePair],
    folder: Path,
    *,
    checks: list[MappingCheck] | None = None,
    comparison: Comparison | None = None,
    title: str = "Calibration: judge vs instructor",
) -> Path:
    """Write ``folder/index.html`` and its PNGs; returns the HTML path."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    images: list[tuple[str, str]] = []  # (file name, caption)
    try:
        if pairs:
            images.append(_overall_heatmap(plt, pairs, folder))
            images.append(_distributions(plt, pairs, folder))
            images.extend(_question_heatmaps(plt, pairs, calibration, folder))
        if calibration.questions:
            images.append(_question_bars(plt, calibration, folder))
        if calibration.criteria:
            images.append(_criterion_bars(plt, calibration, folder))
    finally:
        plt.close("all")
    html = _template().render(
        title=title,
        c=calibration,
        images=images,
        checks=checks or [],
        comparison=comparison,
        metrics=METRIC_LABELS,
        fmt=_fmt,
    )
    path = folder / "index.html"
    path.write_text(html, encoding="utf-8")
    return path


def _labels(max_score: float) -> np.ndarray:
    return np.arange(0, math.ceil(max_score) + 1)


def _confusion(pairs: list[ScorePair], size: int) -> np.ndarray:
    counts = np.zeros((size, size), dtype=int)
    np.add.at(
        counts,
        (
            to_labels(np.array([p.human for p in pairs])),
            to_labels(np.array([p.judge for p in pairs])),
        ),
        1,
    )
    return counts


def _draw_heatmap(ax, pairs: list[ScorePair], max_score: float, annotate: bool) -> None:
    labels = _labels(max_score)
    counts = _confusion(pairs, len(labels))
    from matplotlib.colors import PowerNorm

    # Square-root colour scale: one crowded cell (everyone agrees on full marks) would
    # otherwise wash out every off-diagonal cell, which is what the instructor needs to see.
    norm = PowerNorm(gamma=0.5, vmin=0, vmax=max(1, counts.max()))
    ax.imshow(counts, cmap="Blues", origin="lower", norm=norm)
    ax.plot([-0.5, len(labels) - 0.5], [-0.5, len(labels) - 0.5], color="0.6", lw=0.6)
    if annotate:
        for (row, col), value in np.ndenumerate(counts):
            if value:
                color = "white" if norm(value) > 0.6 else "black"
                ax.text(col, row, str(value), ha="center", va="center", fontsize=7, color=color)
    if annotate:
        ticks = labels if len(labels) <= 11 else labels[:: math.ceil(len(labels) / 10)]
    else:  # small multiples: the ends of the scale are enough, and drawing ticks is slow
        ticks = labels[[0, -1]]
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)


def _overall_heatmap(plt, pairs: list[ScorePair], folder: Path) -> tuple[str, str]:
    top = max(p.max_score for p in pairs)
    fig, ax = plt.subplots(figsize=(5, 4.5))
    _draw_heatmap(ax, pairs, top, annotate=math.ceil(top) <= 10)
    ax.set_xlabel("judge (whole points)")
    ax.set_ylabel("instructor (whole points)")
    ax.set_title(f"all questions, {len(pairs)} answers")
    return _save(fig, folder, "heatmap_overall.png"), (
        "Judge vs instructor, all answers (counts; the diagonal is agreement)"
    )


def _distributions(plt, pairs: list[ScorePair], folder: Path) -> tuple[str, str]:
    top = max(p.max_score for p in pairs)
    bins = np.arange(-0.25, top + 0.5, 0.5)  # half-point bins
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(
        [[p.human for p in pairs], [p.judge for p in pairs]],
        bins=bins,
        label=["instructor", "judge"],
        color=["#4c72b0", "#dd8452"],
    )
    ax.set_xlabel("points")
    ax.set_ylabel("answers")
    ax.legend()
    ax.set_title("score distributions")
    return _save(fig, folder, "distributions.png"), "Score distributions (half-point bins)"


def _question_heatmaps(
    plt, pairs: list[ScorePair], calibration: Calibration, folder: Path
) -> list[tuple[str, str]]:
    by_question: dict[str, list[ScorePair]] = defaultdict(list)
    for pair in pairs:
        by_question[pair.question_id].append(pair)
    qwk = {q.question_id: q.qwk.value for q in calibration.questions}
    ids = sorted(by_question, key=question_order)
    shown = ids[: PER_PAGE * MAX_PAGES]
    images = []
    for page, start in enumerate(range(0, len(shown), PER_PAGE), 1):
        chunk = shown[start : start + PER_PAGE]
        cols = min(5, len(chunk))
        rows = math.ceil(len(chunk) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(2.3 * cols, 2.3 * rows), squeeze=False)
        for ax in axes.flat[len(chunk) :]:
            ax.axis("off")
        for ax, qid in zip(axes.flat, chunk, strict=False):
            items = by_question[qid]
            _draw_heatmap(ax, items, items[0].max_score, annotate=False)
            ax.set_title(f"{qid}  κ={_fmt(qwk.get(qid), 2)}  n={len(items)}", fontsize=8)
            ax.tick_params(labelsize=6)
        fig.supxlabel("judge", fontsize=8)
        fig.supylabel("instructor", fontsize=8)
        fig.subplots_adjust(left=0.06, right=0.98, bottom=0.08, top=0.94, wspace=0.3, hspace=0.45)
        name = f"heatmaps_questions_{page}.png"
        caption = f"Per question, page {page}: {chunk[0]} to {chunk[-1]}"
        images.append((_save(fig, folder, name, tight=False), caption))
    if len(ids) > len(shown):
        images[-1] = (images[-1][0], images[-1][1] + f" (first {len(shown)} of {len(ids)})")
    return images


def _question_bars(plt, calibration: Calibration, folder: Path) -> tuple[str, str]:
    return _agreement_bars(
        plt,
        [q.question_id for q in calibration.questions],
        list(calibration.questions),
        folder,
        "agreement_questions.png",
    ), "Agreement per question: QWK (95 % interval) and exact agreement"


def _criterion_bars(plt, calibration: Calibration, folder: Path) -> tuple[str, str]:
    return _agreement_bars(
        plt,
        [f"{c.question_id} {c.criterion_id}" for c in calibration.criteria],
        list(calibration.criteria),
        folder,
        "agreement_criteria.png",
    ), "Agreement per criterion: QWK (95 % interval) and exact agreement"


def _agreement_bars(
    plt, names: list[str], figures: list[Agreement], folder: Path, filename: str
) -> str:
    y = np.arange(len(names))
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(9, 1 + 0.2 * len(names)), sharey=True, squeeze=True
    )
    qwk = np.array([np.nan if f.qwk.value is None else f.qwk.value for f in figures])
    low = np.array([np.nan if f.qwk.low is None else f.qwk.low for f in figures])
    high = np.array([np.nan if f.qwk.high is None else f.qwk.high for f in figures])
    left.barh(y, np.nan_to_num(qwk), color="#4c72b0")
    known = np.isfinite(low) & np.isfinite(high)
    left.hlines(y[known], low[known], high[known], color="black", lw=0.8)  # 95 % interval
    left.set_xlim(-1, 1)
    left.axvline(0, color="0.5", lw=0.6)
    left.set_xlabel("quadratic weighted kappa")
    exact = [0 if f.exact.value is None else f.exact.value for f in figures]
    right.barh(y, exact, color="#55a868")
    right.set_xlim(0, 1)
    right.set_xlabel("exact agreement")
    left.set_yticks(y)
    left.set_yticklabels(names, fontsize=6)
    left.set_ylim(len(names) - 0.5, -0.5)  # first question on top, no empty margin
    return _save(fig, folder, filename)


def _save(fig, folder: Path, name: str, tight: bool = True) -> str:
    if tight:
        fig.tight_layout()
    fig.savefig(folder / name, dpi=100)
    return name


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _template():
    env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True)
    return env.from_string(_TEMPLATE)


_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:14px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td.l,th.l{text-align:left}
.ci{color:#777;font-size:12px}
.answer{white-space:pre-wrap;background:#f6f6f6;padding:6px;text-align:left;max-width:600px}
img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
.note{color:#8a5a00}
</style></head><body>
<h1>{{ title }}</h1>
{% macro cells(a) %}{% for key, _ in metrics %}{% set e = a[key] %}<td>{{ fmt(e.value) }}{% if e.low is not none %}<br><span class="ci">{{ fmt(e.low) }} – {{ fmt(e.high) }}</span>{% endif %}</td>{% endfor %}{% endmacro %}
{% macro head(first) %}<tr>{% for f in first %}<th class="l">{{ f }}</th>{% endfor %}<th>n</th>{% for _, label in metrics %}<th>{{ label }}</th>{% endfor %}</tr>{% endmacro %}
<p>{{ c.overall.n }} answers scored by both. Intervals: 95 % percentile bootstrap over answers,
{{ c.bootstrap }} resamples, seed {{ c.seed }}. QWK on whole points (fractional scores rounded half
up); exact agreement on the raw scores; judge − human &gt; 0 means the judge is more lenient.</p>
{% for n in c.notes + c.overall.notes %}<p class="note">{{ n }}</p>{% endfor %}
{% if c.human_only %}<p class="note">{{ c.human_only|length }} answer(s) graded by the instructor have no grade: {{ c.human_only[:20]|join(", ") }}</p>{% endif %}
{% if c.judge_unscored %}<p class="note">{{ c.judge_unscored|length }} answer(s) the judge did not score: {{ c.judge_unscored[:20]|join(", ") }}</p>{% endif %}
{% if c.excluded_anchors %}<p class="note">left out, because they are anchors the judge has seen: {{ c.excluded_anchors|join(", ") }}</p>{% endif %}
<h2>Overall</h2>
<table>{{ head([]) }}<tr><td>{{ c.overall.n }}</td>{{ cells(c.overall) }}</tr></table>
{% if comparison %}
<h2>Before and after</h2>
<p>Both runs on the {{ comparison.common }} answers they share.</p>
<table>{{ head(["run"]) }}
<tr><td class="l">before</td><td>{{ comparison.before.overall.n }}</td>{{ cells(comparison.before.overall) }}</tr>
<tr><td class="l">after</td><td>{{ comparison.after.overall.n }}</td>{{ cells(comparison.after.overall) }}</tr>
</table>
{% endif %}
{% for name, caption in images[:2] %}<figure><img src="{{ name }}" alt="{{ caption }}"><figcaption>{{ caption }}</figcaption></figure>{% endfor %}
{% if checks %}
<h2>Score mapping (isotonic, cross-validated)</h2>
<p>Agreement on held-out answers ({{ checks[0].folds }}-fold), raw judge scores vs mapped. A mapping
helps only where the mapped row is better.</p>
<table><tr><th class="l">question</th><th class="l">scores</th><th>n</th>{% for _, label in metrics %}<th>{{ label }}</th>{% endfor %}</tr>
{% for ch in checks %}
<tr><td class="l" rowspan="2">{{ ch.question_id or "all" }}</td><td class="l">raw</td><td>{{ ch.raw.n }}</td>{{ cells(ch.raw) }}</tr>
<tr><td class="l">{{ "mapped" if ch.mapped else "not mapped (too few)" }}</td><td>{{ ch.with_mapping.n }}</td>{{ cells(ch.with_mapping) }}</tr>
{% endfor %}</table>
{% endif %}
<h2>Per question</h2>
<table>{{ head(["question"]) }}
{% for q in c.questions %}<tr><td class="l">{{ q.question_id }}</td><td>{{ q.n }}</td>{{ cells(q) }}</tr>
{% endfor %}</table>
{% for name, caption in images[2:] %}<figure><img src="{{ name }}" alt="{{ caption }}"><figcaption>{{ caption }}</figcaption></figure>{% endfor %}
{% if c.criteria %}
<h2>Per criterion</h2>
<table>{{ head(["question", "criterion"]) }}
{% for k in c.criteria %}<tr><td class="l">{{ k.question_id }}</td><td class="l">{{ k.criterion_id }}</td><td>{{ k.n }}</td>{{ cells(k) }}</tr>
{% endfor %}</table>
{% endif %}
<h2>Largest disagreements</h2>
{% for d in c.disagreements %}
<h3>{{ d.submission_id }} ({{ d.question_id }}): instructor {{ "%g"|format(d.human) }}, judge {{ "%g"|format(d.judge) }} of {{ "%g"|format(d.max_score) }}</h3>
{% if d.answer is not none %}<div class="answer">{{ d.answer }}</div>{% endif %}
{% if d.criteria %}<table><tr><th class="l">criterion</th><th>instructor</th><th>judge</th><th class="l">judge's evidence</th><th class="l">why</th></tr>
{% for k in d.criteria %}<tr><td class="l">{{ k.id }}</td><td>{{ "—" if k.human is none else "%g"|format(k.human) }}</td><td>{{ "%g"|format(k.judge) }} / {{ "%g"|format(k.max_points) }}</td><td class="l">{{ k.evidence }}</td><td class="l">{{ k.rationale }}</td></tr>
{% endfor %}</table>{% endif %}
{% if d.feedback %}<p>Judge's feedback: {{ d.feedback }}</p>{% endif %}
{% else %}<p>None: the two agree on every answer.</p>
{% endfor %}
</body></html>
"""
