"""Draft a rubric from a question's reference answer with the judge, for an instructor to edit.

The model only proposes criteria (what each tests, its key points, its points); level
descriptors come from code and the points are made to add up in code, because a small model
is unreliable at arithmetic. The draft is saved with ``reviewed: false``.
"""

from __future__ import annotations

import json
from typing import Any

from grader.engine.judging.prompts import load_prompt, reference_text
from grader.engine.reading.conclusion_derive import derive_conclusion
from grader.engine.reading.rubrics import (
    DEFAULT_SUBJECTIVE_POINTS,
    MAX_DERIVED_CRITERIA,
    levels_for,
    split_points,
)
from grader.errors import JudgeProtocolError
from grader.judge.base import Judge, JudgeRequest
from grader.models import Criterion, Question, Rubric


def draft_schema(points: int, max_criteria: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "criteria": {
                "type": "array",
                "minItems": 1,
                "maxItems": max_criteria,
                "items": {
                    "type": "object",
                    "properties": {
                        "description": {"type": "string", "maxLength": 80},
                        "points": {"enum": list(range(1, max(points, 1) + 1))},
                        "key_points": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": 3,
                            "items": {"type": "string", "maxLength": 30},
                        },
                    },
                    "required": ["description", "points", "key_points"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["criteria"],
        "additionalProperties": False,
    }


def draft_rubric(question: Question, judge: Judge, max_tokens: int = 700) -> Rubric:
    points = question.points if question.points is not None else DEFAULT_SUBJECTIVE_POINTS
    max_criteria = min(MAX_DERIVED_CRITERIA + 1, max(1, int(points)))
    prompt = load_prompt("draft", question.language)
    request = JudgeRequest(
        id=f"draft/{question.id}",
        group=f"draft/{question.id}",
        messages=prompt.render(
            question=question,
            reference=reference_text(question),
            points=f"{points:g}",
            max_criteria=max_criteria,
        ),
        json_schema=draft_schema(int(points), max_criteria),
        max_tokens=max_tokens,
    )
    (completion,) = judge.complete([request])
    if completion.error:
        raise JudgeProtocolError(f"drafting {question.id} failed: {completion.error}")
    try:
        proposed = json.loads(completion.text or "")["criteria"][:max_criteria]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise JudgeProtocolError(f"drafting {question.id}: reply is not a rubric draft") from exc
    shares = _rescale([float(c["points"]) for c in proposed], points)
    criteria = [
        Criterion(
            id=f"C{i + 1}",
            description=str(c["description"]).strip(),
            points=share,
            key_points=[str(k).strip() for k in c["key_points"] if str(k).strip()],
            levels=levels_for(share, question.language),
        )
        for i, (c, share) in enumerate(zip(proposed, shares, strict=True))
    ]
    reference = question.answer if isinstance(question.answer, str) else None
    return Rubric(
        question_id=question.id,
        points=points,
        criteria=criteria,
        conclusion=derive_conclusion(question.stem, reference, question.language),
        reviewed=False,
        notes=f"drafted by {judge.backend}:{judge.model} from the reference answer; "
        "edit the criteria, then set reviewed: true",
    )


def _rescale(proposed: list[float], points: float) -> list[float]:
    """Whole-point shares in the proposed proportions that add up to ``points`` exactly."""
    total = sum(proposed)
    if total == points:
        return proposed
    even = split_points(points, len(proposed))
    if total <= 0:
        return even
    shares = [max(1.0, float(round(p * points / total))) for p in proposed]
    while sum(shares) > points and max(shares) > 1:
        shares[shares.index(max(shares))] -= 1
    while sum(shares) < points:
        shares[shares.index(min(shares))] += 1
    return shares if sum(shares) == points else even
