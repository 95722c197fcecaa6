"""An instructor's scored answers as the scorer's graded neighbours (``grader grade --graded``).

The file is the calibration CSV (``submission_id``, ``question_id``, ``score``, …); each
answer's text comes from the submissions being graded, or from the CSV's ``answer`` column
for an answer that is not among them. Every problem names the CSV's line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from grader.calibrate.tables import HumanScore, Scale
from grader.errors import CalibrationError
from grader.models import GradedAnswer, Submission


def graded_answers(
    humans: Sequence[HumanScore],
    submissions: Mapping[str, Submission],
    scales: Mapping[str, Scale],
    human_file: Path | None = None,
) -> list[GradedAnswer]:
    """The scored answers, checked against the bank's questions and points."""
    out = []
    for human in humans:

        def fail(message: str, human: HumanScore = human) -> CalibrationError:
            return CalibrationError(message, file=human_file, line=human.line)

        if human.question_id not in scales:
            raise fail(f"column question_id: {human.question_id!r} is not in the bank")
        submission = submissions.get(human.submission_id)
        if submission is not None and submission.question_id != human.question_id:
            raise fail(
                f"column question_id: {human.question_id!r}, but the submissions file has "
                f"{submission.question_id!r} for submission {human.submission_id!r}"
            )
        answer = submission.answer if submission is not None else human.answer
        if answer is None:
            raise fail(
                f"column submission_id: {human.submission_id!r} is not in the submissions "
                "file and the CSV has no answer column for it: its text is needed"
            )
        points = scales[human.question_id].max_score
        if human.score > points + 1e-9:
            raise fail(
                f"column score: {human.score:g} exceeds the {points:g} points of question "
                f"{human.question_id!r}"
            )
        out.append(
            GradedAnswer(
                id=human.submission_id,
                question_id=human.question_id,
                answer=answer,
                score=human.score,
            )
        )
    return out
