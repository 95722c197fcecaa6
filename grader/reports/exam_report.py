"""Write the exam report: ``index.html`` (one self-contained file, plots embedded as PNG data
URIs, nothing loaded from the network) and ``report.json`` (the same figures).

Question stems, options, student ids, answers and review messages are untrusted text: the
template escapes everything (Jinja2 autoescape, StrictUndefined so a typo fails loudly).
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from grader.reports.items import WEAK_BELOW, ItemFlag
from grader.reports.plots import exam_plots, question_plots
from grader.reports.summary import ExamReport

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

FLAG_TEXT = {
    ItemFlag.NEGATIVE: "negative discrimination",
    ItemFlag.WEAK: f"weak discrimination (< {WEAK_BELOW:g})",
    ItemFlag.NO_VARIANCE: "no spread",
    ItemFlag.WRONG_KEY: "check the key",
}


def write_report(report: ExamReport, folder: Path) -> Path:
    """Write ``folder/index.html`` and ``folder/report.json``; returns the HTML path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(report.model_dump_json(indent=1), encoding="utf-8")
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    html = env.get_template("exam_report.html.j2").render(
        r=report,
        plots=exam_plots(report),
        question_plots=question_plots(report),
        flag_text=FLAG_TEXT,
        weak_below=WEAK_BELOW,
        fmt=_fmt,
        pts=_pts,
        pct=_pct,
    )
    path = folder / "index.html"
    path.write_text(html, encoding="utf-8")
    return path


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _pts(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"
