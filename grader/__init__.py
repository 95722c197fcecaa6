"""grader: grade exam answers against rubrics — exactly where possible, with a judge where not.

The library's public API, for code that grades without the command line::

    from grader import Pipeline, Settings, Submission, load_bank, load_rubrics

    bank = load_bank(path)
    pipeline = Pipeline(bank, load_rubrics(path, bank), judge=make_judge(settings), ...)
    grades = pipeline.grade_many([Submission(...)])

Names load on first use (PEP 562), so ``import grader`` stays free of numpy, torch and vLLM.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from grader.version import __version__

if TYPE_CHECKING:
    from grader.bank.files import load_bank
    from grader.config import (
        CacheSettings,
        EmbeddingSettings,
        JudgeSettings,
        LimitSettings,
        OpenAISettings,
        PageSettings,
        ReviewSettings,
        RuleSettings,
        ScorerSettings,
        ServiceSettings,
        Settings,
        SignalSettings,
        VllmSettings,
        WebhookSettings,
    )
    from grader.embed import make_embedder
    from grader.engine.pipeline import Pipeline
    from grader.engine.reading.rubrics import load_rubrics
    from grader.errors import GraderError
    from grader.judge import make_judge
    from grader.models import (
        Anchor,
        AnchoredReading,
        AnswerSignals,
        AnswerVariant,
        Bank,
        CheckReading,
        ClaimsCheck,
        Conclusion,
        ConclusionReading,
        Criterion,
        CriterionScore,
        FoundClaim,
        Grade,
        GradedAnswer,
        GradedCopy,
        GradeDetails,
        GradeProvenance,
        GradeStatus,
        InjectionReading,
        JudgeModeName,
        JudgeSide,
        KeyPointMatch,
        Level,
        MappingUsed,
        Method,
        MultipleChoiceCredit,
        NearDuplicate,
        Neighbour,
        OverrideRecord,
        Part,
        PartReading,
        Penalty,
        Question,
        QuestionType,
        RescoredFrom,
        ReviewCode,
        ReviewRanking,
        ReviewReason,
        Rubric,
        Sampling,
        ScorerExplanation,
        SourceRef,
        Submission,
        Substance,
        TrailEntry,
        TrailStep,
        WrongClaim,
    )

# Where each public name is defined; the record models all live in ``grader.models``.
_HOMES = {
    "Pipeline": "grader.engine.pipeline",
    "Settings": "grader.config",
    "CacheSettings": "grader.config",
    "EmbeddingSettings": "grader.config",
    "JudgeSettings": "grader.config",
    "LimitSettings": "grader.config",
    "OpenAISettings": "grader.config",
    "PageSettings": "grader.config",
    "ReviewSettings": "grader.config",
    "RuleSettings": "grader.config",
    "ScorerSettings": "grader.config",
    "ServiceSettings": "grader.config",
    "SignalSettings": "grader.config",
    "VllmSettings": "grader.config",
    "WebhookSettings": "grader.config",
    "load_bank": "grader.bank.files",
    "load_rubrics": "grader.engine.reading.rubrics",
    "make_judge": "grader.judge",
    "make_embedder": "grader.embed",
    "GraderError": "grader.errors",
}

__all__ = [
    "Anchor",
    "AnchoredReading",
    "AnswerSignals",
    "AnswerVariant",
    "Bank",
    "CacheSettings",
    "CheckReading",
    "ClaimsCheck",
    "Conclusion",
    "ConclusionReading",
    "Criterion",
    "CriterionScore",
    "EmbeddingSettings",
    "FoundClaim",
    "Grade",
    "GradeDetails",
    "GradeProvenance",
    "GradeStatus",
    "GradedAnswer",
    "GradedCopy",
    "GraderError",
    "InjectionReading",
    "JudgeModeName",
    "JudgeSettings",
    "JudgeSide",
    "KeyPointMatch",
    "Level",
    "LimitSettings",
    "MappingUsed",
    "Method",
    "MultipleChoiceCredit",
    "NearDuplicate",
    "Neighbour",
    "OpenAISettings",
    "OverrideRecord",
    "PageSettings",
    "Part",
    "PartReading",
    "Penalty",
    "Pipeline",
    "Question",
    "QuestionType",
    "RescoredFrom",
    "ReviewCode",
    "ReviewRanking",
    "ReviewReason",
    "ReviewSettings",
    "Rubric",
    "RuleSettings",
    "Sampling",
    "ScorerExplanation",
    "ScorerSettings",
    "ServiceSettings",
    "Settings",
    "SignalSettings",
    "SourceRef",
    "Submission",
    "Substance",
    "TrailEntry",
    "TrailStep",
    "VllmSettings",
    "WebhookSettings",
    "WrongClaim",
    "__version__",
    "load_bank",
    "load_rubrics",
    "make_embedder",
    "make_judge",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'grader' has no attribute {name!r}")
    value = getattr(import_module(_HOMES.get(name, "grader.models")), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
