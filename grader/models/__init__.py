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
from grader.models.grade import (
    AnswerSignals,
    CriterionScore,
    Grade,
    GradedAnswer,
    GradeStatus,
    KeyPointMatch,
    Method,
    NearDuplicate,
    ReviewCode,
    ReviewReason,
    Submission,
)
from grader.models.rubric import (
    Anchor,
    Conclusion,
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
from grader.models.verdict import (
    CriterionVerdict,
    Verdict,
)

__all__ = [
    "Anchor",
    "AnswerSignals",
    "Bank",
    "Conclusion",
    "Criterion",
    "CriterionScore",
    "CriterionVerdict",
    "DeliveryStatus",
    "Grade",
    "GradeStatus",
    "GradedAnswer",
    "KeyPointMatch",
    "Level",
    "Method",
    "MultipleChoiceCredit",
    "NearDuplicate",
    "Penalty",
    "Question",
    "QuestionType",
    "ReviewCode",
    "ReviewReason",
    "Rubric",
    "SourceRef",
    "Submission",
    "SubmissionStatus",
    "Verdict",
    "WrongClaim",
]
