"""A question's human-scored answers, as the scorer's neighbours read them: the graded answers
given (a calibration CSV, the instructor pages) and the rubric's anchors an instructor scored."""

from __future__ import annotations

from grader.models import Anchor, GradedAnswer, Rubric
from grader.text import match_key


def graded_answers(rubric: Rubric, graded: list[GradedAnswer]) -> list[GradedAnswer]:
    """A question's human-scored answers: those given, and the rubric's anchors that carry a
    score on every criterion (an instructor graded them when promoting them), named
    ``anchor:<id>``. An anchor promoted from one of the given answers (its ``answer_id`` is the
    given id, the text the same) is that answer once, with the instructor's newest score."""
    ids = {c.id for c in rubric.criteria}
    given = {g.id: match_key(g.answer) for g in graded}
    anchors = [
        GradedAnswer(
            id=f"anchor:{a.id}",
            question_id=rubric.question_id,
            answer=a.answer,
            score=sum(a.scores.values()),
        )
        for a in rubric.anchors
        if set(a.scores) == ids and not _promoted_from(a, given)
    ]
    return [*graded, *anchors]


def _promoted_from(anchor: Anchor, given: dict[str, str]) -> bool:
    """Whether the anchor is one of the given answers (their ids and match keys)."""
    if anchor.answer_id is None:
        return False
    return given.get(str(anchor.answer_id)) == match_key(anchor.answer)
