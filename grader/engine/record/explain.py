"""A finished grade read back as a person reads it: ``grader explain``.

What the grade gave each criterion and the answer's sentence that earned it, then every step
of its trail (``details.trail``): where the score came from and each step that moved it, with
why and on what. Plain lines, so the command line, a log or a page can show them alike.
"""

from __future__ import annotations

from grader.models import Grade, TrailEntry

SHOWN_CHARS = 120  # a quoted sentence is cut here


def explain(grade: Grade) -> list[str]:
    """The grade as lines of text: the score, the criteria, the steps, review and feedback."""
    who = f", student {grade.student}" if grade.student else ""
    head = f"{grade.submission_id} (question {grade.question_id}{who}): "
    if grade.score is None:
        head += f"no score ({grade.status})"
    else:
        head += f"{_points(grade.score)} of {_points(grade.max_score)} ({grade.method})"
    lines = [head, *criteria_lines(grade), *trail_lines(grade)]
    if grade.review_reasons:
        flag = "to review" if grade.needs_review else "noted"
        lines.append(f"Review ({flag}):")
        lines += [f"  {r.code}: {r.message}" for r in grade.review_reasons]
    if grade.feedback:
        lines += ["Feedback:", *(f"  {line}" for line in grade.feedback.splitlines())]
    return lines


def criteria_lines(grade: Grade) -> list[str]:
    """Each criterion's points, the sentence that earned them (none for no points) and its
    line of why where the grade has one ("verified: …", "not verified: scored by similarity")."""
    if not grade.criteria:
        return []
    width = max(len(c.id) for c in grade.criteria)
    lines = ["Criteria (points given, the answer's sentence that earned them, and why):"]
    for c in grade.criteria:
        earned = f"  “{_cut(c.evidence)}”" if c.evidence and c.points > 0 else ""
        lines.append(f"  {c.id:<{width}}  {_points(c.points)} / {_points(c.max_points)}{earned}")
        if c.rationale:
            lines.append(f"  {' ' * width}  ↳ {_cut(c.rationale)}")
    return lines


def trail_lines(grade: Grade) -> list[str]:
    """Where the score came from, then every step that moved it."""
    trail = grade.trail
    if not trail:
        return ["How the score was decided: not recorded (graded before grades kept a trail)."]
    lines = ["How the score was decided:"]
    width = max(len(e.step) for e in trail)
    for number, entry in enumerate(trail, 1):
        lines.append(f"  {number}. {entry.step:<{width}}  {_move(entry)}  {entry.why}")
        lines += [f"     {' ' * width}  · {_cut(e)}" for e in entry.evidence]
    return lines


def _move(entry: TrailEntry) -> str:
    if entry.before is None:
        return f"→ {_points(entry.after)}"
    return f"{_points(entry.before)} → {_points(entry.after)}"


def _points(value: float | None) -> str:
    return "—" if value is None else f"{round(value, 2):g}"


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SHOWN_CHARS else flat[: SHOWN_CHARS - 1] + "…"
