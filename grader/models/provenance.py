"""A grade's ``provenance``: what produced it, so it can be traced and reproduced.

Each kind of grade records what applies to it (an objective grade has no judge, a rule's no
prompt); ``GradeProvenance`` writes exactly the keys its writer set, null where the writer
said null (a judged grade without a judge object), as the record always has. Keys nobody here
knows are kept and written back as they came.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict

from grader.models.bank import MultipleChoiceCredit
from grader.models.base import _Model
from grader.models.details import JudgeModeName, JudgePlanName, SetOnly


class Sampling(_Model):
    """The verdict mode's sampling: how many samples, at what temperature and seed."""

    samples: int
    temperature: float
    max_tokens: int | None
    seed: int | None


class MappingUsed(_Model):
    """The learned score mapping a grade's score went through (``grader calibrate apply``)."""

    method: str
    version: str
    source: str
    learned_on: int


class GradeProvenance(SetOnly):
    """Engine, judge, prompt, rubric, embeddings, scorer, sampling, tokens and latency."""

    model_config = ConfigDict(extra="allow")

    engine: str | None = None
    judge_mode: JudgeModeName | None = None
    backend: str | None = None
    model: str | None = None
    prompt_version: str | None = None
    rubric_version: str | None = None
    rubric_reviewed: bool | None = None
    anchors: list[str] | None = None
    embed_model: str | None = None
    checks: int | None = None  # the probability mode: checks asked per answer
    judge_plan: JudgePlanName | None = None  # the budget: set where no judge read the answer
    judge_checks: int | None = None
    feedback: Literal["template", "judge"] | None = None  # the probability mode's feedback
    sampling: Sampling | None = None
    attempts: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    latency_s: float | None = None
    multiple_choice_credit: MultipleChoiceCredit | None = None
    scorer_version: str | None = None
    scored_by: str | None = None
    score_mapping: MappingUsed | None = None
