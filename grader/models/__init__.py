"""Domain models: the typed contract between the bank, the graders, the store and the API.

Everything that crosses a boundary (files, HTTP, queue) is one of these pydantic models, so a
bad field fails loudly with its name instead of deep inside the pipeline. One module per part
of the contract; import them from here.
"""

from grader.models.bank import (
    Bank,
    MultipleChoiceCredit,
    Question,
    QuestionType,
    SourceRef,
)
from grader.models.details import (
    AnchoredReading,
    AnswerVariant,
    CheckReading,
    ConclusionReading,
    FoundClaim,
    GradedCopy,
    JudgeModeName,
    JudgeSide,
    Neighbour,
    OverrideRecord,
    RescoredFrom,
    ReviewRanking,
    ScorerExplanation,
    Substance,
)
from grader.models.grade import (
    AnswerSignals,
    CriterionScore,
    Grade,
    GradedAnswer,
    GradeDetails,
    GradeStatus,
    InjectionReading,
    KeyPointMatch,
    Method,
    NearDuplicate,
    ReviewCode,
    ReviewReason,
    Submission,
)
from grader.models.provenance import GradeProvenance, MappingUsed, Sampling
from grader.models.rubric import (
    Anchor,
    Conclusion,
    ConclusionKind,
    Criterion,
    Level,
    Penalty,
    Rubric,
    WrongClaim,
)
from grader.models.service import (
    DeliveryStatus,
    SubmissionStatus,
)
from grader.models.trail import TrailEntry, TrailStep
from grader.models.verdict import (
    CriterionVerdict,
    Verdict,
)

__all__ = [
    "Anchor",
    "AnchoredReading",
    "AnswerSignals",
    "AnswerVariant",
    "Bank",
    "CheckReading",
    "Conclusion",
    "ConclusionKind",
    "ConclusionReading",
    "Criterion",
    "CriterionScore",
    "CriterionVerdict",
    "DeliveryStatus",
    "FoundClaim",
    "Grade",
    "GradeDetails",
    "GradeProvenance",
    "GradeStatus",
    "GradedAnswer",
    "GradedCopy",
    "InjectionReading",
    "JudgeModeName",
    "JudgeSide",
    "KeyPointMatch",
    "Level",
    "MappingUsed",
    "Method",
    "MultipleChoiceCredit",
    "NearDuplicate",
    "Neighbour",
    "OverrideRecord",
    "Penalty",
    "Question",
    "QuestionType",
    "RescoredFrom",
    "ReviewCode",
    "ReviewRanking",
    "ReviewReason",
    "Rubric",
    "Sampling",
    "ScorerExplanation",
    "SourceRef",
    "Submission",
    "SubmissionStatus",
    "Substance",
    "TrailEntry",
    "TrailStep",
    "Verdict",
    "WrongClaim",
]
