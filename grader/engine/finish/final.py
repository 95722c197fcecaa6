"""The final score, decided in one place: ``finish`` runs ``STEPS`` in order.

A grade leaves judging with the judge's points, a split by key-point coverage, or a rule's 0.
Then, for every answer alike — graded now (``Pipeline.grade_many``), re-scored by another
scorer (``rescored``: a refit, ``grader calibrate rescore``, the instructor pages' regrade):

1. ``scorer``: the calibrated scorer's score (``scoring.scorer_grade``);
2. ``claims``: each criterion bounded by what the answer was read to assert (its decisive
   parts verified by rules), a trusted judge's own reading weighed in (``finish.verified``);
3. ``feedback``: for an answer no judge read, under ``GRADER_FEEDBACK=judge``, one sentence
   the judge writes from the scorer's grade (the score does not move);
4. ``substance``: a restated question or a bare list of terms capped, known wrong claims
   deducted;
5. ``conclusion``: a wrong conclusion capped;
6. ``injection``: the lower of the raw and the cleaned answer's finished grades.

Each step is a function (grade, context) → grade that records its own trail entry when it
moves the score (``Grade.moved``); a step that asks a model does so once for the whole batch
first (``Step.ask``), so the judge sees one call per step, not one per answer. A new step is
one more entry in ``STEPS``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from grader.engine.finish.conclusion import ask_conclusions, conclusion_step
from grader.engine.finish.context import Finishing
from grader.engine.finish.injection_bound import injection_step, pair_twins
from grader.engine.finish.substance import substance_step
from grader.engine.finish.verified import ask_claims, claims_step
from grader.engine.judging.budget import split_by_coverage, write_feedback
from grader.engine.scoring.scorer_core.rules import COPY, readable
from grader.engine.scoring.scorer_grade import scored_grade
from grader.models import Grade, GradeStatus, TrailStep

Run = Callable[[Grade, Finishing], Grade]
Ask = Callable[[Sequence[Grade], Sequence[Finishing]], list[Finishing]]


@dataclass(frozen=True)
class Step:
    """One finishing step: ``run`` per answer; ``ask``, when set, once per batch before it."""

    name: str
    run: Run
    ask: Ask | None = None


def scorer_step(grade: Grade, context: Finishing) -> Grade:
    """The scorer's score, criteria, confidence and reasons, where a scorer decides."""
    scoring = context.scoring
    if scoring is None or context.rubric is None or grade.status != GradeStatus.GRADED:
        return grade
    if not readable(scoring.scorer, scoring.scorer_input.features):
        return grade  # no model has its features (a question without a reference): as judged
    new = scored_grade(
        grade, context.answer or "", context.rubric, scoring.scorer_input, scoring.scorer,
        scoring.review_below, scoring.anchored,
    )  # fmt: skip
    explained = new.details.scorer
    assert explained is not None
    if explained.decided_by == COPY:
        why = "a graded answer with the same text: its grade"
        evidence = [f"{c.id}: {c.score:g}" for c in explained.copies if c.score is not None]
    else:
        why = f"the scorer ({explained.decided_by}): {explained.share:.0%} of the points"
        pushes = sorted(explained.contributions.items(), key=lambda kv: -abs(kv[1]))[:3]
        evidence = [f"{name} {push:+.2f}" for name, push in pushes]
    return new.moved(TrailStep.SCORER, grade.score, why, evidence)


def ask_feedback(grades: Sequence[Grade], contexts: Sequence[Finishing]) -> list[Finishing]:
    """One judge call for the feedback sentences of the answers no judge read."""
    asks = {
        i: (c.question, c.rubric, c.answer, g)
        for i, (g, c) in enumerate(zip(grades, contexts, strict=True))
        if c.feedback_by_judge and c.question is not None and c.rubric is not None
        and c.answer is not None and split_by_coverage(g)
    }  # fmt: skip
    judge = next((contexts[i].judge for i in asks if contexts[i].judge is not None), None)
    if judge is None:
        return list(contexts)
    sentences = write_feedback(judge, asks)
    return [
        replace(c, feedback_sentence=sentences[i]) if i in sentences else c
        for i, c in enumerate(contexts)
    ]


def feedback_step(grade: Grade, context: Finishing) -> Grade:
    """The judge's sentence as the grade's feedback, where it wrote one."""
    if context.feedback_sentence is None:
        return grade
    return grade.model_copy(update={"feedback": context.feedback_sentence})


STEPS: tuple[Step, ...] = (
    Step("scorer", scorer_step),
    Step("claims", claims_step, ask_claims),
    Step("feedback", feedback_step, ask_feedback),
    Step("substance", substance_step),
    Step("conclusion", conclusion_step, ask_conclusions),
    Step("injection", injection_step, pair_twins),
)


def finish_many(grades: Sequence[Grade], contexts: Sequence[Finishing]) -> list[Grade]:
    """Every grade finished, same order: each step over the whole batch before the next.
    A cleaned twin (named by its raw answer's ``twin``) is finished beside it and returned
    too; the caller drops it."""
    done, known = list(grades), list(contexts)
    for step in STEPS:
        if step.ask is not None:
            known = step.ask(done, known)
        done = [step.run(g, c) for g, c in zip(done, known, strict=True)]
    return done


def finish(grade: Grade, context: Finishing) -> Grade:
    """One grade finished (an answer without a cleaned twin)."""
    return finish_many([grade], [context])[0]
