"""``Pipeline.grade_many``: the one entry point that turns submissions into grades, batch-first.

1. objective questions are graded exactly (``grader.engine.objective``);
2. blank and non-answers ("不知道") to subjective questions score 0 by rule, before any model;
3. with an embedder, each question's answers are compared with each other and with the
   reference (``grader.engine.signals``): off-topic answers score 0 by rule and go to review,
   near-duplicates are flagged, answers are grouped, and each group gets its closest anchors;
4. every other answer becomes judge requests — one per self-consistency sample, plus a second
   one with the suspicious span removed when the answer looks like an injection attempt —
   sorted by question and group so answers sharing a prompt prefix run together in one batch;
5. verdicts are checked (each criterion's quote must occur in the answer, or it scores 0),
   aggregated, compared with key-point coverage, and turned into confidence and review flags.

A judge that fails yields ``unscored`` with a reason, never a silent 0.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grader import __version__
from grader.config import Settings
from grader.engine import asking
from grader.engine.anchors import choose_anchors
from grader.engine.asking import JudgeReply
from grader.engine.coverage import coverage_points
from grader.engine.evidence import check_verdict
from grader.engine.injection import find_injections, strip_injections
from grader.engine.objective import grade_objective
from grader.engine.prompts import judge_messages, judge_prompt
from grader.engine.rubrics import rubric_for
from grader.engine.signals import QuestionAnalysis, analyze_question, blank_reason
from grader.engine.verdict import token_budget, verdict_schema
from grader.judge.base import Judge, JudgeRequest
from grader.models import (
    Anchor,
    AnswerSignals,
    Bank,
    CriterionScore,
    Grade,
    GradeStatus,
    Method,
    Question,
    ReviewReason,
    Rubric,
    Submission,
    Verdict,
)

if TYPE_CHECKING:
    from grader.embed import Embedder

COVERAGE_GAP = 0.5  # judge and coverage further apart than half the points: review
COVERED = 0.5  # a key point at least this covered counts as present
HIGH, LOW = 0.6, 0.2  # judge shares of the points that contradict "no key point" / "most"


@dataclass
class _Work:
    """One subjective submission on its way through the judge."""

    submission: Submission
    question: Question
    rubric: Rubric
    signals: AnswerSignals | None = None
    anchors: list[Anchor] = field(default_factory=list)
    prefix_group: str = ""  # answers with the same anchors share a prompt prefix
    injections: list = field(default_factory=list)
    requests: list[JudgeRequest] = field(default_factory=list)  # samples on the raw answer
    cleaned_requests: list[JudgeRequest] = field(default_factory=list)  # samples, span removed
    cleaned_answer: str | None = None
    replies: list[JudgeReply] = field(default_factory=list)
    cleaned_replies: list[JudgeReply] = field(default_factory=list)


class Pipeline:
    """Grades submissions to one bank. Holds the judge, so it is built once per process."""

    def __init__(
        self,
        bank: Bank,
        rubrics: dict[str, Rubric] | None = None,
        judge: Judge | None = None,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
    ):
        self.bank = bank
        self.rubrics = rubrics or {}
        self.judge = judge
        self.settings = settings or Settings()
        self.embedder = embedder
        self._questions = {q.id: q for q in bank.questions}

    def grade_many(
        self, submissions: Sequence[Submission], cohort: Sequence[Submission] = ()
    ) -> list[Grade]:
        """One grade per submission, same order. Question ids must exist in the bank.

        ``cohort``: other answers to the same questions (say, the whole exam) that off-topic,
        near-duplicate and group signals compare against; the batch is always part of it.
        """
        grades: dict[int, Grade] = {}
        subjective: dict[int, Submission] = {}
        for i, submission in enumerate(submissions):
            question = self._questions[submission.question_id]
            if question.type.objective:
                grades[i] = self._objective(submission, question)
            elif why := blank_reason(submission.answer, self.settings.min_answer_chars):
                grades[i] = self._blank(submission, question, why)
            else:
                subjective[i] = submission
        analyses = self._analyze(list(subjective.values()), cohort)
        work: dict[int, _Work] = {}
        for i, submission in subjective.items():
            question = self._questions[submission.question_id]
            analysis = analyses.get(question.id)
            signals = analysis.signals[submission.id] if analysis else None
            if signals is not None and signals.off_topic:
                grades[i] = self._off_topic(submission, question, signals)
            elif self.judge is None:
                grades[i] = self._needs_judge(submission, question, signals)
            else:
                work[i] = self._prepare(submission, question, analysis)
        if work:
            self._run_judge(list(work.values()))
            for i, item in work.items():
                grades[i] = self._judged(item)
        return [grades[i] for i in range(len(submissions))]

    # --- objective and rule-based --------------------------------------------------------

    def _base(self, submission: Submission, question: Question) -> dict:
        return {
            "submission_id": submission.id,
            "question_id": question.id,
            "student": submission.student,
        }

    def _objective(self, submission: Submission, question: Question) -> Grade:
        max_points = (
            question.points
            if question.points is not None
            else self.settings.default_objective_points
        )
        provenance = {
            "engine": f"grader {__version__}",
            "multiple_choice_credit": self.settings.multiple_choice_credit.value,
        }
        if question.answer is None:
            return Grade(
                **self._base(submission, question),
                status=GradeStatus.NO_KEY,
                score=None,
                max_score=max_points,
                method=Method.NONE,
                needs_review=True,
                review_reasons=[ReviewReason(code="no_key", message="the bank has no answer key")],
                provenance=provenance,
            )
        if not submission.answer.strip():
            return Grade(
                **self._base(submission, question),
                status=GradeStatus.GRADED,
                score=0.0,
                max_score=max_points,
                method=Method.RULE,
                review_reasons=[ReviewReason(code="blank", message="no answer given")],
                details={"expected": question.answer},
                provenance=provenance,
            )
        result = grade_objective(
            question, submission.answer, max_points, self.settings.multiple_choice_credit
        )
        return Grade(
            **self._base(submission, question),
            status=GradeStatus.GRADED,
            score=result.points,
            max_score=max_points,
            method=Method.EXACT,
            confidence=None if result.reasons else 1.0,
            needs_review=bool(result.reasons),
            review_reasons=result.reasons,
            details={
                "read_as": result.read_as,
                "expected": question.answer,
                "correct": result.correct,
            },
            provenance=provenance,
        )

    def _blank(self, submission: Submission, question: Question, why: str) -> Grade:
        message = {
            "blank": "blank or too short: 0 without the judge",
            "non_answer": "says it has no answer: 0 without the judge",
        }[why]
        return self._zero_by_rule(
            submission, question, "blank answer", [ReviewReason(code=why, message=message)], 1.0
        )

    def _off_topic(
        self, submission: Submission, question: Question, signals: AnswerSignals
    ) -> Grade:
        """0 by rule, but always to review: the decision came from similarity, not reading."""
        off_topic = ReviewReason(
            code="off_topic",
            message=f"no closer to the question and reference than unrelated text "
            f"(margin {signals.topic_margin:+.3f}): 0 without the judge",
        )
        return self._zero_by_rule(
            submission,
            question,
            "off topic",
            [off_topic, *_duplicate_reasons(signals)],
            0.5,
            signals=signals,
            needs_review=True,
        )

    def _zero_by_rule(
        self,
        submission: Submission,
        question: Question,
        rationale: str,
        reasons: list[ReviewReason],
        confidence: float,
        signals: AnswerSignals | None = None,
        needs_review: bool = False,
    ) -> Grade:
        rubric = rubric_for(question, self.rubrics)
        provenance = {"engine": f"grader {__version__}", "rubric_version": rubric.version}
        if signals is not None and self.embedder is not None:
            provenance["embed_model"] = self.embedder.name
        return Grade(
            **self._base(submission, question),
            status=GradeStatus.GRADED,
            score=0.0,
            max_score=rubric.points,
            method=Method.RULE,
            criteria=[
                CriterionScore(id=c.id, points=0.0, max_points=c.points, rationale=rationale)
                for c in rubric.criteria
            ],
            confidence=confidence,
            needs_review=needs_review,
            review_reasons=reasons,
            signals=signals,
            provenance=provenance,
        )

    def _needs_judge(
        self, submission: Submission, question: Question, signals: AnswerSignals | None
    ) -> Grade:
        rubric = rubric_for(question, self.rubrics)
        return Grade(
            **self._base(submission, question),
            status=GradeStatus.NEEDS_JUDGE,
            score=None,
            max_score=rubric.points,
            method=Method.NONE,
            review_reasons=[
                ReviewReason(
                    code="needs_judge",
                    message=f"{question.type} questions need the LLM judge; none is configured",
                ),
                *(_duplicate_reasons(signals) if signals else []),
            ],
            signals=signals,
            provenance={"engine": f"grader {__version__}"},
        )

    # --- embeddings ----------------------------------------------------------------------

    def _analyze(
        self, submissions: list[Submission], cohort: Sequence[Submission]
    ) -> dict[str, QuestionAnalysis]:
        """Per question, the signals of the batch's answers within their whole cohort."""
        if self.embedder is None or not submissions:
            return {}
        batch: dict[str, list[Submission]] = {}
        for s in submissions:
            batch.setdefault(s.question_id, []).append(s)
        others: dict[str, list[Submission]] = {qid: [] for qid in batch}
        for s in cohort:
            if (
                s.question_id in batch
                and blank_reason(s.answer, self.settings.min_answer_chars) is None
            ):
                others[s.question_id].append(s)
        analyses = {}
        for qid, mine in batch.items():
            question = self._questions[qid]
            analyses[qid] = analyze_question(
                question,
                rubric_for(question, self.rubrics),
                mine,
                self.embedder,
                self.settings,
                cohort=others[qid],
            )
        return analyses

    # --- the judge -----------------------------------------------------------------------

    def _prepare(
        self, submission: Submission, question: Question, analysis: QuestionAnalysis | None
    ) -> _Work:
        rubric = rubric_for(question, self.rubrics)
        item = _Work(submission, question, rubric, injections=find_injections(submission.answer))
        item.anchors, item.prefix_group = self._anchors_for(submission, rubric, analysis)
        if analysis is not None:
            item.signals = analysis.signals[submission.id]
        item.requests = self._requests(item, submission.answer, "raw")
        if item.injections:
            item.cleaned_answer = strip_injections(submission.answer, item.injections)
            if len(item.cleaned_answer.strip()) >= self.settings.min_answer_chars:
                item.cleaned_requests = self._requests(item, item.cleaned_answer, "cleaned")
        return item

    def _anchors_for(
        self, submission: Submission, rubric: Rubric, analysis: QuestionAnalysis | None
    ) -> tuple[list[Anchor], str]:
        """The anchors for this answer's group, and a key shared by answers that get the same."""
        if analysis is None:
            anchors = choose_anchors(rubric.anchors, self.settings.anchors_k)
        else:
            anchors = analysis.anchors[analysis.signals[submission.id].group]
        return anchors, ",".join(a.id for a in anchors)

    def _requests(self, item: _Work, answer: str, variant: str) -> list[JudgeRequest]:
        prompt = judge_prompt(item.question.language)
        messages = judge_messages(prompt, item.question, item.rubric, answer, item.anchors)
        samples = self.settings.judge_samples
        return [
            JudgeRequest(
                id=f"{item.submission.id}/{variant}/{k}",
                group=f"{item.question.id}@{item.rubric.version}+{prompt.version}#{item.prefix_group}",
                messages=messages,
                json_schema=verdict_schema(item.rubric),
                rubric=item.rubric,
                answer=answer,
                max_tokens=min(self.settings.judge_max_tokens, token_budget(item.rubric)),
                temperature=self.settings.judge_temperature if samples > 1 else 0.0,
                seed=self.settings.judge_seed + k,
            )
            for k in range(samples)
        ]

    def _run_judge(self, items: list[_Work]) -> None:
        requests = [r for item in items for r in (*item.requests, *item.cleaned_requests)]
        # Identical answers to one question (copies, one-word answers, an injection stripped
        # back to its clean twin) are judged once and share the verdict.
        unique: dict[str, JudgeRequest] = {}
        for r in requests:
            unique.setdefault(_request_key(r), r)
        # Same question next to each other: the backend sees shared prefixes back to back.
        batch = sorted(unique.values(), key=lambda r: r.group)
        replies = asking.ask(self.judge, batch, self.settings.judge_max_reasks)
        by_key = {_request_key(r): reply for r, reply in zip(batch, replies, strict=True)}
        for item in items:
            item.replies = [by_key[_request_key(r)] for r in item.requests]
            item.cleaned_replies = [by_key[_request_key(r)] for r in item.cleaned_requests]

    def _judged(self, item: _Work) -> Grade:
        replies, cleaned = item.replies, item.cleaned_replies
        rubric, answer = item.rubric, item.submission.answer
        provenance = self._provenance(item, replies + cleaned)
        good = [r.verdict for r in replies if r.verdict is not None]
        if not good:
            reason = next((r.error for r in replies if r.error), "no verdict")
            transient = all(r.transient for r in replies)
            return Grade(
                **self._base(item.submission, item.question),
                status=GradeStatus.UNSCORED,
                score=None,
                max_score=rubric.points,
                method=Method.JUDGE,
                needs_review=True,
                review_reasons=[
                    ReviewReason(
                        code="judge_unavailable" if transient else "judge_failed",
                        message=f"no valid verdict after {replies[0].attempts} attempt(s): {reason}",
                    )
                ],
                provenance=provenance,
            )
        reasons: list[ReviewReason] = []
        criteria, totals, unsupported = _aggregate(good, rubric, answer)
        if unsupported:
            reasons.append(
                ReviewReason(
                    code="evidence_not_found",
                    message=f"quoted evidence missing from the answer or reused, scored 0: {', '.join(sorted(unsupported))}",
                )
            )
        score = sum(c.points for c in criteria)
        feedback = good[0].feedback

        if item.injections:
            codes = sorted({f.code for f in item.injections})
            reasons.append(
                ReviewReason(
                    code="suspected_injection",
                    message=f"{', '.join(codes)}: {item.injections[0].text[:60]!r}",
                )
            )
            cleaned_good = [r.verdict for r in cleaned if r.verdict is not None]
            if cleaned_good or not item.cleaned_requests:
                c_criteria, _, _ = _aggregate(cleaned_good, rubric, item.cleaned_answer or "")
                c_score = sum(c.points for c in c_criteria)
                if c_score < score:  # keep the lower score, pending review
                    criteria, score, feedback = (
                        c_criteria,
                        c_score,
                        (cleaned_good[0].feedback if cleaned_good else ""),
                    )

        if len(good) < len(replies):
            reasons.append(
                ReviewReason(
                    code="judge_partial",
                    message=f"{len(replies) - len(good)} of {len(replies)} samples failed",
                )
            )
        spread = (max(totals) - min(totals)) / rubric.points if len(totals) > 1 else 0.0
        coverage = coverage_points(rubric, answer)
        # Wording (n-grams) and meaning (embeddings) fail on different answers: use both.
        model_free = (
            coverage if item.signals is None else (coverage + item.signals.coverage_points) / 2
        )
        gap = abs(score - model_free) / rubric.points
        confidence = round(max(0.0, min(1.0 - spread, 1.0 - gap)), 3)
        if gap > COVERAGE_GAP:
            reasons.append(
                ReviewReason(
                    code="coverage_disagreement",
                    message=f"judge {score:g} vs key-point coverage {model_free:.1f} of {rubric.points:g}",
                )
            )
        if item.signals is not None:
            reasons.extend(_semantic_reasons(score / rubric.points, item.signals))
            reasons.extend(_duplicate_reasons(item.signals))
        if confidence < self.settings.review_below_confidence:
            reasons.append(
                ReviewReason(code="low_confidence", message=f"confidence {confidence:.2f}")
            )
        if not rubric.reviewed:
            reasons.append(
                ReviewReason(
                    code="unreviewed_rubric", message="rubric derived from the reference answer"
                )
            )
        if item.question.incomplete and not rubric.reviewed:  # a reviewed rubric completes it
            reasons.append(
                ReviewReason(
                    code="incomplete_question",
                    message="the paper's question or reference is cut off",
                )
            )
        return Grade(
            **self._base(item.submission, item.question),
            status=GradeStatus.GRADED,
            score=round(score, 4),
            max_score=rubric.points,
            method=Method.JUDGE,
            criteria=criteria,
            feedback=feedback or None,
            confidence=confidence,
            needs_review=bool(reasons),
            review_reasons=reasons,
            details={
                "coverage_points": round(coverage, 2),
                "samples": len(good),
                "sample_totals": totals,
            },
            signals=item.signals,
            provenance=provenance,
        )

    def _provenance(self, item: _Work, replies: list[JudgeReply]) -> dict:
        prompt = judge_prompt(item.question.language)
        return {
            "engine": f"grader {__version__}",
            "backend": self.judge.backend if self.judge else None,
            "model": self.judge.model if self.judge else None,
            "prompt_version": prompt.version,
            "rubric_version": item.rubric.version,
            "rubric_reviewed": item.rubric.reviewed,
            "anchors": [a.id for a in item.anchors],
            "embed_model": self.embedder.name if self.embedder else None,
            "sampling": {
                "samples": self.settings.judge_samples,
                "temperature": item.requests[0].temperature,
                "max_tokens": item.requests[0].max_tokens,
                "seed": self.settings.judge_seed,
            },
            "attempts": sum(r.attempts for r in replies),
            "prompt_tokens": sum(r.prompt_tokens for r in replies),
            "completion_tokens": sum(r.completion_tokens for r in replies),
            "cached_tokens": sum(r.cached_tokens or 0 for r in replies),
            "latency_s": round(sum(r.latency_s for r in replies), 3),
        }


def _semantic_reasons(share: float, signals: AnswerSignals) -> list[ReviewReason]:
    """A high score with no key point in sight, or a low one with most of them there."""
    if not signals.key_points:
        return []
    covered = sum(m.coverage >= COVERED for m in signals.key_points)
    total = len(signals.key_points)
    if share >= HIGH and covered == 0:
        message = f"judge gave {share:.0%} of the points but no key point is covered in meaning"
    elif share <= LOW and covered * 3 >= total * 2:
        message = f"judge gave {share:.0%} of the points but {covered} of {total} key points are covered in meaning"
    else:
        return []
    return [ReviewReason(code="semantic_disagreement", message=message)]


def _duplicate_reasons(signals: AnswerSignals) -> list[ReviewReason]:
    if not signals.near_duplicates:
        return []
    others = ", ".join(
        f"{d.submission_id}" + (f" ({d.student})" if d.student else "") + f" {d.similarity:.3f}"
        for d in signals.near_duplicates[:3]
    )
    more = len(signals.near_duplicates) - 3
    return [
        ReviewReason(
            code="near_duplicate",
            message=f"nearly the same as {others}" + (f" and {more} more" if more > 0 else ""),
        )
    ]


def _request_key(request: JudgeRequest) -> str:
    return json.dumps(
        [request.messages, request.temperature, request.seed, request.max_tokens],
        ensure_ascii=False,
    )


def _aggregate(
    verdicts: list[Verdict], rubric: Rubric, answer: str
) -> tuple[list[CriterionScore], list[float], set[str]]:
    """Per criterion the median of the checked sample points; also each sample's total."""
    unsupported: dict[str, str] = {}  # criterion id -> why its points were taken away
    checked: list[dict[str, float]] = []
    quotes: dict[str, str] = {}
    for verdict in verdicts:
        points = {}
        for cid, (value, quote, problem) in check_verdict(verdict, rubric, answer).items():
            points[cid] = value
            if problem:
                unsupported.setdefault(cid, problem)
            elif quote:
                quotes.setdefault(cid, quote)
        checked.append(points)
    notes = {"not_in_answer": " [quoted evidence not in the answer]",
             "reused": " [the same quote was used for too many criteria]"}  # fmt: skip
    scores = []
    for c in rubric.criteria:
        first = verdicts[0].criteria[c.id] if verdicts else None
        points = statistics.median(p[c.id] for p in checked) if checked else 0.0
        note = notes[unsupported[c.id]] if c.id in unsupported and not points else ""
        scores.append(
            CriterionScore(
                id=c.id,
                points=float(points),
                max_points=c.points,
                evidence=quotes.get(c.id, ""),
                rationale=(first.rationale if first else "") + note,
            )
        )
    return scores, [round(sum(p.values()), 4) for p in checked], set(unsupported)
