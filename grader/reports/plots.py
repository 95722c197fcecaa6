"""The exam report's plots (matplotlib, Agg backend), as PNG data URIs: the report is one file
that can be mailed or archived without its pictures going missing.

Labels are question ids and numbers only (ASCII), so no CJK font is needed to draw them.
"""

from __future__ import annotations

import base64
import io
import math

import numpy as np

from grader.reports.items import WEAK_BELOW, ItemFlag
from grader.reports.summary import ExamReport, QuestionReport

BLUE, RED, GREY = "#4c72b0", "#c44e52", "#999999"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    return plt


def data_uri(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def exam_plots(report: ExamReport) -> dict[str, str]:
    """'totals' and 'items' (facility vs discrimination) data URIs; absent when empty."""
    plt = _pyplot()
    plots = {}
    try:
        if report.totals:
            plots["totals"] = _totals(plt, report)
        if any(q.items and q.items.discrimination is not None for q in report.questions):
            plots["items"] = _item_map(plt, report)
    finally:
        plt.close("all")
    return plots


def question_plots(report: ExamReport) -> dict[str, str]:
    """Question id → its score distribution. One figure redrawn per question: fast enough
    for a few hundred questions."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(3.2, 1.9))
    # Fixed margins: tight_layout would lay out (draw) every figure twice.
    fig.subplots_adjust(left=0.14, right=0.97, bottom=0.24, top=0.87)
    plots = {}
    try:
        for q in report.questions:
            if q.scored:
                ax.clear()
                _distribution(ax, q)
                plots[q.question_id] = data_uri(fig)
    finally:
        plt.close(fig)
    return plots


def _distribution(ax, q: QuestionReport) -> None:
    points = np.array([float(p) for p in q.score_counts])
    counts = np.array(list(q.score_counts.values()))
    top = q.max_score if q.max_score is not None else points.max()
    # Every whole point on the axis, so an empty score shows as a gap, not as nothing.
    ticks = np.arange(0, math.floor(top) + 1)
    width = 0.8 if np.allclose(points, np.round(points)) else 0.4
    colors = [RED if p == 0 else BLUE for p in points]
    ax.bar(points, counts, width=width, color=colors)
    ax.set_xticks(ticks if len(ticks) <= 11 else ticks[:: math.ceil(len(ticks) / 10)])
    ax.set_xlim(-0.6, top + 0.6)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("points", fontsize=7)
    ax.set_ylabel("answers", fontsize=7)
    ax.tick_params(labelsize=7)
    ax.set_title(f"{q.question_id}  n={q.scored}", fontsize=8)


def _totals(plt, report: ExamReport) -> str:
    totals = np.array(report.totals)
    fig, ax = plt.subplots(figsize=(6, 3))
    top = max(report.max_total, float(totals.max()))
    bins = np.linspace(0, top, min(20, max(5, len(totals))) + 1)
    ax.hist(totals, bins=bins, color=BLUE, edgecolor="white")
    ax.axvline(float(totals.mean()), color="black", lw=1, ls="--", label="mean")
    ax.set_xlim(0, top)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel(f"total points (of {report.max_total:g})")
    ax.set_ylabel("students")
    ax.legend(fontsize=8)
    ax.set_title(f"total scores, {len(totals)} students")
    fig.tight_layout()
    return data_uri(fig)


def _item_map(plt, report: ExamReport) -> str:
    """Facility against discrimination: the items to look at are low or below zero."""
    shown = [
        (q, q.items) for q in report.questions if q.items and q.items.discrimination is not None
    ]
    x = [items.facility for _, items in shown]
    y = [items.discrimination for _, items in shown]
    flagged = [
        bool({ItemFlag.NEGATIVE, ItemFlag.WEAK, ItemFlag.WRONG_KEY} & set(items.flags))
        for _, items in shown
    ]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.axhspan(-1, 0, color=RED, alpha=0.08)
    ax.axhline(0, color=GREY, lw=0.8)
    ax.axhline(WEAK_BELOW, color=GREY, lw=0.8, ls=":")
    ax.scatter(x, y, c=[RED if f else BLUE for f in flagged], s=18)
    labelled = [(q, xi, yi) for (q, _), xi, yi, f in zip(shown, x, y, flagged, strict=True) if f]
    for i, (q, xi, yi) in enumerate(labelled):
        # Items often share a point on small exams: stagger the labels so they stay legible.
        offset = (4, 4 - 9 * (i % 3))
        ax.annotate(q.question_id, (xi, yi), fontsize=7, xytext=offset, textcoords="offset points")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-1.02, 1.02)
    ax.set_xlabel("facility (share of points scored)")
    ax.set_ylabel("discrimination (r with rest of exam)")
    ax.set_title("item map: flagged items in red")
    fig.tight_layout()
    return data_uri(fig)
