"""What the finishing steps read about one answer beside its grade (``final.finish``).

Grading fills every field it knows; a re-score from a stored grade knows less (no question
text, perhaps no answer text): a step that lacks what it needs applies what the grade recorded
instead, or nothing. The fields after ``twin`` are filled by the steps themselves, once per
batch, before they run (``final.Step.ask``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from grader.engine.finish.wrong_claims import wrong_claims
from grader.engine.signals.copies import char_ngrams
from grader.models import (
    AnchoredReading,
    FoundClaim,
    Grade,
    PartReading,
    Question,
    ReviewReason,
    Rubric,
)

if TYPE_CHECKING:
    from grader.engine.reading.conclusion_read import ConclusionRead
    from grader.engine.scoring.scorer_core.inputs import ScorerInput
    from grader.engine.scoring.scorer_model import ScorerSet
    from grader.judge.base import Judge


@dataclass(frozen=True)
class Scoring:
    """The scorer and what it reads of the answer: its features, copies and neighbours."""

    scorer: ScorerSet
    scorer_input: ScorerInput
    review_below: float  # confidence under this: a review reason
    anchored: AnchoredReading | None = None  # plan ``anchored``: the judge's anchored reading


@dataclass(frozen=True)
class Finishing:
    """One answer's context for the finishing steps."""

    answer: str | None  # the text graded (a cleaned twin's own); None: not known
    rubric: Rubric | None
    question: Question | None = None  # None: the recorded substance decision applies again
    scoring: Scoring | None = None  # None: no scorer decides this grade
    judge: Judge | None = None  # for the steps that ask the judge once per batch
    feedback_by_judge: bool = False  # GRADER_FEEDBACK=judge for an answer no judge read
    trust_file: Path | None = None  # GRADER_JUDGE_TRUST: how far judge models are trusted
    measure_claims: bool = False  # plan full: the claim check asked wherever rules read nothing
    twin: int | None = None  # the batch position of this answer's cleaned twin
    injection: ReviewReason | None = None  # the suspected injection's reason, with ``twin``
    other_score: float | None = None  # a re-score whose record lacks the other variant: its score
    # filled by the steps' ``ask``, once per batch
    judged_conclusion: ConclusionRead | None = None
    # the decisive parts as the rules read them, with the judge's claim check where it was asked
    parts: list[PartReading] | None = None
    feedback_sentence: str | None = None
    cleaned: Grade | None = None  # the twin's finished grade

    @cached_property
    def wrong_claims(self) -> list[FoundClaim]:
        """The rubric's listed wrong claims as the answer asserts or negates them, read once
        for the two steps that weigh them (claims sets their criteria aside, substance deducts
        their points); none without the answer, its rubric and its question."""
        if self.answer is None or self.rubric is None or self.question is None:
            return []
        return wrong_claims(self.answer, self.rubric, char_ngrams(self.question.stem))
