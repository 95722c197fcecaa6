"""The two ways the judge scores answers, behind one interface; configuration picks one.

- ``probability`` (the default): each rubric check is one forward step whose label
  distribution gives the points (``probability_requests``, ``probability_grades``); nothing is generated
  to score, evidence is the answer's own closest span.
- ``verdict``: the judge writes a JSON verdict per answer (points, quoted evidence, rationale,
  feedback), checked against the answer and re-asked when invalid (``verdict_requests``,
  ``verdict_grades``).

A mode lays out the prefix its requests share (``VerdictPrefix``, ``ProbabilityPrefix``) once per
question and anchor group, then grades a batch of answers with
one judge call, or sub-batches of ``GRADER_JUDGE_CHUNK`` requests that report progress as they
finish (plus, for the probability mode with ``GRADER_FEEDBACK=judge``, one more call that
writes the feedback).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from grader.config import JudgeSettings, ReviewSettings
from grader.engine.judging.feedback import judge_feedback
from grader.engine.judging.probability_grades import probability_grade
from grader.engine.judging.probability_requests import (
    ProbabilityPrefix,
    ProbabilityWork,
    ask_labels,
)
from grader.engine.judging.progress import Progress
from grader.engine.judging.provenance import probability_provenance, verdict_provenance
from grader.engine.judging.verdict_grades import verdict_grade
from grader.engine.judging.verdict_requests import VerdictPrefix, VerdictWork, ask_verdicts
from grader.engine.reading.injection import Finding, Flagged
from grader.judge.base import Judge
from grader.models import (
    Anchor,
    AnswerSignals,
    Grade,
    JudgeModeName,
    Question,
    Rubric,
    Submission,
)


class AnswerToJudge(NamedTuple):
    """An answer, its mode's prefix and signals, and the pipeline's injection decision: the
    judge reads only this text (the cleaned twin is one more answer, ``injection_bound``); a flagged
    answer's grade says so in its review reasons."""

    submission: Submission
    prefix: Any
    signals: AnswerSignals | None
    flagged: Flagged | None = None


class Mode(Protocol):
    """One way the judge scores answers: the prefix its requests share, then a batch graded."""

    def prefix(
        self, question: Question, rubric: Rubric, anchors: list[Anchor], settings: JudgeSettings
    ) -> Any: ...

    def grade(
        self,
        judge: Judge,
        items: Sequence[AnswerToJudge],
        settings: JudgeSettings,
        review: ReviewSettings,
        embed_model: str | None,
        progress: Progress | None = None,
    ) -> list[Grade]: ...


class VerdictMode:
    def prefix(
        self, question: Question, rubric: Rubric, anchors: list[Anchor], settings: JudgeSettings
    ) -> VerdictPrefix:
        return VerdictPrefix.build(question, rubric, anchors, settings)

    def grade(
        self,
        judge: Judge,
        items: Sequence[AnswerToJudge],
        settings: JudgeSettings,
        review: ReviewSettings,
        embed_model: str | None,
        progress: Progress | None = None,
    ) -> list[Grade]:
        work = [
            VerdictWork.prepare(s, prefix, signals, _findings(flagged), settings)
            for s, prefix, signals, flagged in items
        ]
        ask_verdicts(judge, work, settings.max_reasks, settings.chunk, progress)
        return [
            verdict_grade(w, verdict_provenance(w, judge, embed_model, settings), review)
            for w in work
        ]


class ProbabilityMode:
    def prefix(
        self, question: Question, rubric: Rubric, anchors: list[Anchor], settings: JudgeSettings
    ) -> ProbabilityPrefix:
        return ProbabilityPrefix.build(question, rubric, anchors)

    def grade(
        self,
        judge: Judge,
        items: Sequence[AnswerToJudge],
        settings: JudgeSettings,
        review: ReviewSettings,
        embed_model: str | None,
        progress: Progress | None = None,
    ) -> list[Grade]:
        work = [
            ProbabilityWork.prepare(s, prefix, signals, _findings(flagged))
            for s, prefix, signals, flagged in items
        ]
        ask_labels(judge, work, settings.chunk, progress)
        grades = [
            probability_grade(w, probability_provenance(w, judge, embed_model, settings), review)
            for w in work
        ]
        if settings.feedback == "judge":
            _written_feedback(judge, work, grades)
        return grades


def _findings(flagged: Flagged | None) -> list[Finding]:
    """What the pipeline flagged in an answer, for its grade's review reasons."""
    return flagged.findings if flagged is not None else []


def _written_feedback(judge: Judge, work: list[ProbabilityWork], grades: list[Grade]) -> None:
    """Replace the template feedback of scored grades with one generated sentence each; a
    failed sentence keeps the template's."""
    scored = [(w, g, g.score) for w, g in zip(work, grades, strict=True) if g.score is not None]
    asks = [
        (w.prefix.question, w.prefix.rubric, w.submission.answer, score, g.details.missing or [])
        for w, g, score in scored
    ]
    for (_, grade, _), sentence in zip(scored, judge_feedback(judge, asks), strict=True):
        if sentence:
            grade.feedback = sentence


MODES: dict[str, Mode] = {
    JudgeModeName.VERDICT: VerdictMode(),
    JudgeModeName.PROBABILITY: ProbabilityMode(),
}
