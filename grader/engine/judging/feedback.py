"""Feedback for the student, from the scored criteria: what is still missing, largest first.

By default a template per language (``prompts/feedback/<lang>/feedback.j2``) names the
criteria that lost the most points, so the sentence says exactly what the grade says. With
``GRADER_FEEDBACK=judge`` the judge writes one short sentence per answer instead, in a second
pass after scoring (free text, so it costs generated tokens the scoring never spends).
"""

from __future__ import annotations

from collections.abc import Sequence

from grader.engine.judging.prompts import (
    defuse_delimiters,
    load_prompt,
    reference_text,
    render_template,
)
from grader.judge.base import Judge, JudgeRequest
from grader.models import CriterionScore, Question, Rubric

MISSING_SHOWN = 2  # criteria named in the feedback
MISSING_SHARE = 0.25  # a criterion counts as missing when it lost at least this share
FEEDBACK_TOKENS = 64


def missing_criteria(rubric: Rubric, criteria: Sequence[CriterionScore]) -> list[str]:
    """Descriptions of the criteria that lost the most points, at most ``MISSING_SHOWN``."""
    by_id = {c.id: c for c in rubric.criteria}
    lost = sorted(
        (c for c in criteria if c.max_points - c.points >= MISSING_SHARE * c.max_points),
        key=lambda c: c.max_points - c.points,
        reverse=True,
    )
    return [by_id[c.id].description for c in lost[:MISSING_SHOWN]]


def template_feedback(language: str, missing: list[str]) -> str:
    return render_template("feedback", language, "feedback", missing=missing)


def judge_feedback(
    judge: Judge, asks: Sequence[tuple[Question, Rubric, str, float, list[str]]]
) -> list[str | None]:
    """One generated sentence per (question, rubric, answer, score, missing); None on failure."""
    requests = []
    for i, (question, rubric, answer, score, missing) in enumerate(asks):
        prompt = load_prompt("feedback_judge", question.language)
        variables = dict(
            question=question,
            rubric=rubric,
            reference=reference_text(question),
            answer=defuse_delimiters(answer),
            score=score,
            missing=missing,
        )
        requests.append(
            JudgeRequest(
                id=str(i),
                group=f"feedback:{question.id}",
                messages=prompt.render(**variables),
                json_schema={},
                structured_output=False,
                max_tokens=FEEDBACK_TOKENS,
            )
        )
    completions = judge.complete(requests)
    return [c.text.strip() if c.text and not c.error else None for c in completions]
