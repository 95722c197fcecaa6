"""Promote instructor-graded answers to rubric anchors: worked examples the judge sees.

An anchor needs the instructor's points on every criterion, because that is what the judge is
shown. A total alone is split only when the rubric has a single criterion; otherwise the
promotion is refused rather than guessing how the instructor would have split it.

``plan_promotions`` and ``save_promotions`` are the one promote flow that ``grader calibrate
promote`` and the instructor pages share: every promotion is checked (a subjective question,
a valid new rubric) before any rubric file is written, then each becomes a new rubric version
in the bank's rubric folder and in the caller's rubrics at once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from grader.calibrate.tables import HumanScore
from grader.engine.reading.rubrics import edit_rubric_file, rubric_dir, rubric_for, rubric_problems
from grader.errors import CalibrationError
from grader.models import Anchor, Bank, Rubric
from grader.text import match_key


@dataclass(frozen=True)
class Promotion:
    """One question's rubric before and after its new anchors."""

    question_id: str
    before: Rubric
    after: Rubric

    @property
    def added(self) -> int:
        return len(self.after.anchors) - len(self.before.anchors)


def plan_promotions(
    bank: Bank,
    rubrics: dict[str, Rubric],
    humans: list[HumanScore],
    answers: dict[str, str],
    *,
    note: str | None = None,
    human_file: Path | str | None = None,
) -> list[Promotion]:
    """The new rubrics, one per question the scores belong to, all checked; nothing written.

    A question without a rubric file gets its derived rubric, anchors added. Raises
    CalibrationError (naming the score's file and line) when any promotion cannot be made.
    """
    by_question: dict[str, list[HumanScore]] = defaultdict(list)
    for human in humans:
        by_question[human.question_id].append(human)
    planned = []
    for qid, items in by_question.items():
        question = bank.get(qid)
        if question is None or question.type.objective:
            raise CalibrationError(
                f"{qid!r} is not a subjective question of {bank.name}",
                file=human_file,
                line=items[0].line,
            )
        rubric = rubric_for(question, rubrics)
        promoted = promote_anchors(rubric, items, answers, note=note, human_file=human_file)
        problems = rubric_problems(promoted, question)
        if problems:
            raise CalibrationError("; ".join(problems), file=human_file, line=items[0].line)
        planned.append(Promotion(qid, rubric, promoted))
    return planned


def save_promotions(
    promotions: list[Promotion], bank_path: Path, rubrics: dict[str, Rubric]
) -> list[Path]:
    """Write each new rubric next to the bank and put it in ``rubrics`` (the graders of this
    process use it from their next batch); the files written, same order."""
    paths = []
    for promotion in promotions:
        paths.append(edit_rubric_file(promotion.after, rubric_dir(bank_path)))
        rubrics[promotion.question_id] = promotion.after
    return paths


def promote_anchors(
    rubric: Rubric,
    humans: list[HumanScore],
    answers: dict[str, str],
    *,
    note: str | None = None,
    human_file: Path | str | None = None,
) -> Rubric:
    """A new rubric (new version) with one anchor per human score appended.

    Each anchor's id is its submission id, so calibration can leave anchors out later: the
    judge has seen their scores. A score from the instructor pages also gives the anchor its
    ``answer_id`` (see ``Anchor``).
    """
    anchors = list(rubric.anchors)
    for human in humans:

        def fail(message: str, human: HumanScore = human) -> CalibrationError:
            return CalibrationError(
                f"submission {human.submission_id!r}: {message}", file=human_file, line=human.line
            )

        if human.question_id != rubric.question_id:
            raise fail(f"answers {human.question_id!r}, not {rubric.question_id!r}")
        answer = human.answer or answers.get(human.submission_id)
        if not answer or not answer.strip():
            raise fail("no answer text: pass the submissions file or add an 'answer' column")
        for existing in anchors:
            if existing.id == human.submission_id:
                raise fail(f"already an anchor of {rubric.question_id}")
            if match_key(existing.answer) == match_key(answer):
                raise fail(f"same answer as anchor {existing.id!r} of {rubric.question_id}")
        anchors.append(
            Anchor(
                id=human.submission_id,
                answer=answer,
                scores=_criterion_scores(rubric, human, fail),
                note=note or human.note,
                answer_id=human.answer_id,
            )
        )
    return rubric.model_copy(update={"anchors": anchors})


def _criterion_scores(rubric: Rubric, human: HumanScore, fail) -> dict[str, float]:
    ids = [c.id for c in rubric.criteria]
    if not human.criteria:
        if len(ids) == 1:
            return {ids[0]: human.score}
        raise fail(
            f"no points per criterion, and the rubric has {len(ids)} criteria: "
            f"add columns {', '.join(ids)} to the CSV"
        )
    unknown = sorted(set(human.criteria) - set(ids))
    if unknown:
        raise fail(f"unknown criterion {', '.join(unknown)} (criteria: {', '.join(ids)})")
    missing = [cid for cid in ids if cid not in human.criteria]
    if missing:
        raise fail(f"no points for {', '.join(missing)}: an anchor needs every criterion")
    for criterion in rubric.criteria:
        if human.criteria[criterion.id] > criterion.points + 1e-9:
            raise fail(
                f"{criterion.id}: {human.criteria[criterion.id]:g} exceeds its "
                f"{criterion.points:g} points"
            )
    total = sum(human.criteria.values())
    if abs(total - human.score) > 1e-9:
        raise fail(f"criterion points add up to {total:g}, but the score is {human.score:g}")
    return {cid: human.criteria[cid] for cid in ids}
