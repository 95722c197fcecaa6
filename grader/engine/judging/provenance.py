"""Provenance: what produced a grade, recorded on the grade itself.

Backend, model, prompt and rubric versions, sampling, tokens and latency, so a grade can be
traced and reproduced, and a cached grade never outlives the rubric or prompt it was made with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grader.config import JudgeSettings, RuleSettings
from grader.models import GradeProvenance, JudgeModeName, Rubric, Sampling
from grader.version import __version__

if TYPE_CHECKING:
    from grader.engine.judging.probability_requests import ProbabilityWork
    from grader.engine.judging.verdict_requests import VerdictWork
    from grader.judge.base import Judge

ENGINE = f"grader {__version__}"


def objective_provenance(rules: RuleSettings) -> GradeProvenance:
    return GradeProvenance(engine=ENGINE, multiple_choice_credit=rules.multiple_choice_credit)


def rule_provenance(rubric: Rubric, embed_model: str | None) -> GradeProvenance:
    """A subjective answer scored by rule; ``embed_model`` when embeddings took part."""
    provenance = GradeProvenance(engine=ENGINE, rubric_version=rubric.version)
    if embed_model is not None:
        provenance.embed_model = embed_model
    return provenance


def verdict_provenance(
    item: VerdictWork,
    judge: Judge | None,
    embed_model: str | None,
    settings: JudgeSettings,
) -> GradeProvenance:
    prefix, replies = item.prefix, item.replies
    return GradeProvenance(
        engine=ENGINE,
        judge_mode=JudgeModeName.VERDICT,
        backend=judge.backend if judge else None,
        model=judge.model if judge else None,
        prompt_version=prefix.prompt.version,
        rubric_version=prefix.rubric_version,
        rubric_reviewed=prefix.rubric.reviewed,
        anchors=[a.id for a in prefix.anchors],
        embed_model=embed_model,
        sampling=Sampling(
            samples=settings.samples,
            temperature=prefix.temperature,
            max_tokens=prefix.max_tokens,
            seed=settings.seed,
        ),
        attempts=sum(r.attempts for r in replies),
        prompt_tokens=sum(r.prompt_tokens for r in replies),
        completion_tokens=sum(r.completion_tokens for r in replies),
        cached_tokens=sum(r.cached_tokens or 0 for r in replies),
        latency_s=round(sum(r.latency_s for r in replies), 3),
    )


def probability_provenance(
    item: ProbabilityWork, judge: Judge, embed_model: str | None, settings: JudgeSettings
) -> GradeProvenance:
    """The probability mode: no sampling and no generated tokens, one forward step per check."""
    prefix, scores = item.prefix, item.scores
    return GradeProvenance(
        engine=ENGINE,
        judge_mode=JudgeModeName.PROBABILITY,
        backend=judge.backend,
        model=judge.model,
        prompt_version=prefix.prompt.version,
        rubric_version=prefix.rubric_version,
        rubric_reviewed=prefix.rubric.reviewed,
        anchors=[a.id for a in prefix.anchors],
        embed_model=embed_model,
        checks=len(prefix.checks),
        feedback=settings.feedback,
        prompt_tokens=sum(s.prompt_tokens for s in scores),
        completion_tokens=0,
        cached_tokens=sum(s.cached_tokens or 0 for s in scores),
        latency_s=round(sum(s.latency_s for s in scores), 3),
    )
