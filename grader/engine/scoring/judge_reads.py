"""Whether the judge reads an answer at all: the scorer that will decide its grade says.

Under the ``budget`` plan (``GRADER_JUDGE_PLAN``, the default) the judge's criterion checks
run only where the scorer weighs the judge's reading (its file's languages); elsewhere the
answer's criteria are split by key-point coverage (``judging.budget.coverage_grade``).
"""

from __future__ import annotations

from grader.config import JudgeSettings
from grader.engine.scoring.scorer_model import ScorerSet


def reads_criteria(
    judge: JudgeSettings, scorer: ScorerSet | None, language: str, analysed: bool
) -> bool:
    """Whether the judge's criterion checks run on an answer in ``language``: always in the
    ``full`` plan; in ``budget``, unless a scorer decides the score (it needs the question's
    signals: ``analysed``) and weighs no judge reading in that language."""
    if judge.plan == "full" or scorer is None or not analysed:
        return True
    return scorer.weighs_judge(language)
