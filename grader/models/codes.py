"""A grade's status, method and review reasons: the codes platforms switch on, on their own
floor so that every part of the record can name them."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from grader.models.base import _Model


class GradeStatus(StrEnum):
    GRADED = "graded"
    UNSCORED = "unscored"  # the engine tried and could not score: see review_reasons
    NEEDS_JUDGE = "needs_judge"  # subjective question and no judge configured
    NO_KEY = "no_key"  # the bank has no reference answer to grade against


class Method(StrEnum):
    EXACT = "exact"
    JUDGE = "judge"
    RULE = "rule"  # decided without a model (e.g. a blank answer)
    NONE = "none"
    INSTRUCTOR = "instructor"  # an instructor's override; the judge's grade is in details


class ReviewCode(StrEnum):
    """Why a grade goes to an instructor (or why it has no score); the JSON keeps the value."""

    # objective questions
    NO_KEY = "no_key"  # the bank has no answer key
    UNREADABLE_ANSWER = "unreadable_answer"  # not a letter, a true/false mark, an answer
    NO_SUCH_OPTION = "no_such_option"
    BLANK_COUNT = "blank_count"  # fill-in: not as many answers as blanks
    # decided by rule, without the judge
    BLANK = "blank"
    NON_ANSWER = "non_answer"  # "不知道", "I don't know"
    OFF_TOPIC = "off_topic"
    NEAR_DUPLICATE = "near_duplicate"
    NEEDS_JUDGE = "needs_judge"  # subjective question and no judge configured
    # the judge
    JUDGE_UNAVAILABLE = "judge_unavailable"  # transient: the answer is graded again later
    JUDGE_FAILED = "judge_failed"  # replied, but never with a valid verdict
    JUDGE_PARTIAL = "judge_partial"  # some self-consistency samples failed
    EVIDENCE_NOT_FOUND = "evidence_not_found"
    SUSPECTED_INJECTION = "suspected_injection"
    COVERAGE_DISAGREEMENT = "coverage_disagreement"
    SEMANTIC_DISAGREEMENT = "semantic_disagreement"
    LOW_CONFIDENCE = "low_confidence"
    SCORER_DISAGREEMENT = "scorer_disagreement"  # the judge and the calibrated score far apart
    EXPECTED_ERROR = "expected_error"  # in the top of its question's ranking (review_queue)
    RUBRIC_COPY = "rubric_copy"  # the answer pastes the rubric's own wording
    RESTATED_QUESTION = "restated_question"  # nothing checkable beyond the question's words
    WRONG_CLAIM = "wrong_claim"  # asserts one of the rubric's known misconceptions
    UNVERIFIED = "unverified"  # no criterion's content verified: the grade rests on similarity
    KEYWORDS_ONLY = "keywords_only"  # a bare list of the rubric's terms, asserting nothing
    CONTRADICTED = "contradicted"  # denies a criterion's decisive part: its points taken
    THINLY_VERIFIED = "thinly_verified"  # over 30 % of the points, under 30 % of them verified
    # the rubric and the question
    UNREVIEWED_RUBRIC = "unreviewed_rubric"
    INCOMPLETE_QUESTION = "incomplete_question"
    CONCLUSION_UNDECIDED = "conclusion_undecided"  # the rules could not read the conclusion


class ReviewReason(_Model):
    code: ReviewCode = Field(description="Machine-readable, e.g. 'incomplete_question'.")
    message: str
