"""The decisive part: a wrong conclusion caps the final grade, whatever scored the rest.

The scorer and the judge see an answer's topic and wording, not whether it concludes 正确 where
the reference says 错误; an instructor gives such an answer nothing. So after the final score
(the calibrated scorer's, or a re-score's), the rubric's conclusion is read by rules
(``conclusion_read``) and a mismatch caps the grade at ``cap_share`` of the points: a cap, not
a subtraction, so a weak answer with the wrong verdict is not pushed below what it earned. The
criteria are scaled down with it, the feedback says why, and ``details.conclusion`` keeps the
reading (kind, expected, read, evidence, decision, confidence, cap). An answer the rules cannot
read goes to review (``conclusion_undecided``) and keeps its grade. ``gate: false`` on the
rubric's conclusion records the reading and never caps.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from grader.engine.finish.context import Finishing
from grader.engine.judging.conclusion_judge import Ask, judge_conclusions
from grader.engine.reading.conclusion_read import ConclusionRead, read_conclusion
from grader.engine.scoring.points import STEP, scaled_to  # a cap stays in half points
from grader.models import (
    Conclusion,
    ConclusionReading,
    Grade,
    GradeStatus,
    Method,
    ReviewCode,
    ReviewReason,
    Rubric,
    TrailStep,
)

_CJK = re.compile(r"[\u4e00-\u9fff]")
_PREFIXES = ("结论错误：", "Wrong conclusion: ")
_SHOWN = {"true": "正确", "false": "错误"}


def ask_conclusions(grades: Sequence[Grade], contexts: Sequence[Finishing]) -> list[Finishing]:
    """The conclusions the rules cannot read, where the reading would change the grade,
    asked of the judge in one call before the step runs."""
    asks: dict[int, Ask] = {}
    for i, (grade, c) in enumerate(zip(grades, contexts, strict=True)):
        rubric = c.rubric
        if c.judge is None or c.question is None or c.answer is None or rubric is None:
            continue
        if rubric.conclusion is not None and asks_judge(grade, rubric, c.answer):
            asks[i] = Ask(grade.submission_id, c.question, rubric.conclusion, c.answer)
    if not asks:
        return list(contexts)
    judge = contexts[next(iter(asks))].judge
    assert judge is not None
    judged = judge_conclusions(judge, list(asks.values()))
    return [
        replace(c, judged_conclusion=judged.get(asks[i].key)) if i in asks else c
        for i, c in enumerate(contexts)
    ]


def conclusion_step(grade: Grade, context: Finishing) -> Grade:
    """The finishing step: the grade under its rubric's conclusion (``apply_conclusion``)."""
    new = apply_conclusion(grade, context.rubric, context.answer, context.judged_conclusion)
    record = new.details.conclusion
    if new.score == grade.score or record is None:
        return new
    said = f"reads {record.read!r}" if record.read else "does not say"
    why = f"the conclusion {said}, expected {record.expected!r}: capped at {record.cap:.0%}"
    return new.moved(TrailStep.CONCLUSION, grade.score, why, [record.evidence])


def apply_conclusion(
    grade: Grade, rubric: Rubric | None, answer: str | None, judged: ConclusionRead | None = None
) -> Grade:
    """``grade`` with its conclusion read (``rubric.conclusion`` against ``answer``), and
    capped when the conclusion is wrong. Where the rules cannot read it, the judge's reading
    (``judged``, ``conclusion_judge``) or the one the grade recorded from the judge decides.
    Without the rubric's conclusion or the answer (a re-score from the stored grade alone),
    the reading the grade recorded is applied again. A grade a rule decided (blank, off
    topic: 0) is left as it is."""
    conclusion = rubric.conclusion if rubric is not None else None
    if grade.method == Method.RULE:
        return grade
    if conclusion is not None and answer is not None:
        reading = read_conclusion(conclusion, answer)
        if reading.decision == "undecided":
            reading = judged or _judged_before(grade, conclusion) or reading
        record = _record(conclusion, reading)
    elif (recorded := grade.details.conclusion) is not None:
        record = ConclusionReading.model_validate(recorded.model_dump(exclude={"capped_from"}))
    else:
        return grade
    update: dict[str, Any] = {}
    limit = _limit(grade, record.cap)
    if record.gate and limit is not None and grade.score is not None and grade.score > limit:
        if record.decision == "mismatch":
            update |= _capped(grade, limit, record)
            record = record.model_copy(update={"capped_from": grade.score})
        elif record.decision == "undecided":
            update |= _to_review(grade, record)
    details = grade.details.model_copy(update={"conclusion": record})
    return grade.model_copy(update=update | {"details": details})


def asks_judge(grade: Grade, rubric: Rubric, answer: str) -> bool:
    """Whether the judge should read this answer's conclusion: the rules cannot, and the
    reading would change the grade (a gated conclusion, a score above its cap)."""
    conclusion = rubric.conclusion
    if conclusion is None or not conclusion.gate or grade.method == Method.RULE:
        return False
    limit = _limit(grade, cap_share(conclusion))
    if limit is None or grade.score is None or grade.score <= limit:
        return False
    return read_conclusion(conclusion, answer).decision == "undecided"


def _judged_before(grade: Grade, conclusion: Conclusion) -> ConclusionRead | None:
    """The judge's reading this grade recorded for the same conclusion (a re-score)."""
    recorded = grade.details.conclusion
    if recorded is None or recorded.by != "judge":
        return None
    if recorded.expected != conclusion.expected or recorded.decision == "undecided":
        return None
    kept = ("decision", "read", "evidence", "confidence", "by")
    return ConclusionRead.model_validate(recorded.model_dump(include=set(kept), exclude_none=True))


def cap_share(conclusion: Conclusion) -> float:
    """The share of the points a wrong conclusion keeps at most: the rubric's ``cap``, else 0
    for a verdict (as papers say, "判断错误不得分") and 0.2 for the other kinds, where the
    working that led to a wrong value or choice can still be worth a little."""
    if conclusion.cap is not None:
        return conclusion.cap
    return 0.0 if conclusion.kind == "verdict" else 0.2


def _record(conclusion: Conclusion, reading: ConclusionRead) -> ConclusionReading:
    return ConclusionReading(
        kind=conclusion.kind,
        expected=conclusion.expected,
        read=reading.read,
        evidence=reading.evidence,
        decision=reading.decision,
        confidence=reading.confidence,
        by=reading.by,
        gate=conclusion.gate,
        cap=cap_share(conclusion),
    )


def _limit(grade: Grade, cap: float) -> float | None:
    """The most a wrong conclusion keeps, in half points rounded down; None when the grade
    has no score to cap."""
    if grade.status != GradeStatus.GRADED or grade.score is None or not grade.max_score:
        return None
    return math.floor(cap * grade.max_score / STEP + 1e-9) * STEP


def _to_review(grade: Grade, record: ConclusionReading) -> dict[str, Any]:
    """An unread conclusion on a grade its cap would change: an instructor looks."""
    reasons = list(grade.review_reasons)
    if all(r.code != ReviewCode.CONCLUSION_UNDECIDED for r in reasons):
        reasons.append(
            ReviewReason(
                code=ReviewCode.CONCLUSION_UNDECIDED,
                message="the answer's conclusion could not be read by rule (expected: "
                f"{record.expected})",
            )
        )
    return {"review_reasons": reasons, "needs_review": True}


def _capped(grade: Grade, limit: float, record: ConclusionReading) -> dict[str, Any]:
    """Score, criteria (scaled down) and feedback under the cap."""
    capped = scaled_to(grade, limit)
    return {
        "score": limit,
        "criteria": capped.criteria,
        "feedback": _feedback(grade.feedback, record),
    }


def _feedback(feedback: str | None, record: ConclusionReading) -> str:
    """ "结论错误：…" (or English) before the grade's own feedback, once."""
    before = feedback or ""
    if before.startswith(_PREFIXES):
        return before
    read = record.read or ""
    if _CJK.search(record.expected + record.evidence):
        if record.kind == "verdict":
            read = _SHOWN.get(read, read)
        said = f"，答案为「{read}」" if read else ""
        head = f"{_PREFIXES[0]}应为「{record.expected}」{said}。"
    else:
        said = f", the answer says '{read}'" if read else ""
        head = f"{_PREFIXES[1]}expected '{record.expected}'{said}."
    return f"{head} {before}".strip()
