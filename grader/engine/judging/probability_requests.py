"""Probability-mode requests: every check of every answer, laid out for the prefix cache.

A ``ProbabilityPrefix`` is made once per question and anchor group: the rubric's checks, the rules
(system message) and each check's short question, rendered once. An answer's requests share
everything up to the end of the answer — rules, question, reference, key points, anchors,
then the answer inside its delimiters — and differ only in the check asked last, so the
answer is computed once and each further check costs a few tokens. Requests are sorted by
that prefix, and identical requests (copied answers) are asked once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from grader.engine.judging.checks import Check, checks_for
from grader.engine.judging.progress import Progress, judge_each_once
from grader.engine.judging.prompts import (
    Prompt,
    defuse_delimiters,
    probability_prompt,
    reference_text,
)
from grader.engine.reading.injection import Finding
from grader.judge.base import Judge, LabelRequest, LabelScores
from grader.models import Anchor, AnswerSignals, Question, Rubric, Submission

# What makes two label requests the same: the conversation ((role, content) pairs), the labels.
LabelKey = tuple[tuple[tuple[str, str], ...], tuple[str, ...]]


@dataclass(frozen=True)
class ProbabilityPrefix:
    """What a question's answers in one anchor group share in their checks."""

    question: Question
    rubric: Rubric
    rubric_version: str
    anchors: list[Anchor]
    prompt: Prompt
    checks: list[Check]
    system: dict[str, str]
    asks: list[str]  # each check's question, rendered once
    group: str

    @classmethod
    def build(cls, question: Question, rubric: Rubric, anchors: list[Anchor]) -> ProbabilityPrefix:
        prompt = probability_prompt(question.language)
        checks = checks_for(rubric, question.language)
        version = rubric.version
        anchor_ids = ",".join(a.id for a in anchors)
        return cls(
            question=question,
            rubric=rubric,
            rubric_version=version,
            anchors=anchors,
            prompt=prompt,
            checks=checks,
            system=prompt.render_part("system"),
            asks=[prompt.render_part("check", check=c)["content"].strip() for c in checks],
            group=f"{question.id}@{version}+{prompt.version}#{anchor_ids}",
        )

    def requests(self, submission_id: str, answer: str) -> list[LabelRequest]:
        """One request per check; all of them share the answer's part of the prompt."""
        head = self.prompt.render_part(
            "user",
            question=self.question,
            rubric=self.rubric,
            reference=reference_text(self.question),
            checks=self.checks,
            anchors=self.anchors,
            answer=defuse_delimiters(answer),
        )["content"]
        return [
            LabelRequest(
                id=f"{submission_id}/{check.number}",
                group=self.group,
                messages=[self.system, {"role": "user", "content": f"{head}\n\n{ask}"}],
                labels=check.labels,
                subject=check.subject,
                answer=answer,
                shared_chars=len(head) + 2,
            )
            for check, ask in zip(self.checks, self.asks, strict=True)
        ]


@dataclass
class ProbabilityWork:
    """One subjective submission on its way through the probability-mode judge."""

    submission: Submission
    prefix: ProbabilityPrefix
    signals: AnswerSignals | None = None
    injections: list[Finding] = field(default_factory=list)  # what the pipeline flagged
    requests: list[LabelRequest] = field(default_factory=list)  # one per check
    scores: list[LabelScores] = field(default_factory=list)

    @classmethod
    def prepare(
        cls,
        submission: Submission,
        prefix: ProbabilityPrefix,
        signals: AnswerSignals | None,
        injections: list[Finding],
    ) -> ProbabilityWork:
        requests = prefix.requests(submission.id, submission.answer)
        return cls(submission, prefix, signals, injections, requests)


def ask_labels(
    judge: Judge,
    items: Sequence[ProbabilityWork],
    chunk: int | None = None,
    progress: Progress | None = None,
) -> None:
    """Every item's checks, sorted by shared prefix, in one judge call (or sub-batches of
    ``chunk`` requests, each answer reported when its checks are scored); scores land on the
    items."""
    # Sorting by the whole conversation keeps a question's answers together (same group and
    # system message first) and each answer's checks next to each other.
    replies = judge_each_once(
        [item.requests for item in items],
        _key,
        lambda pair: (pair[1].group, pair[0]),
        judge.score_labels,
        chunk,
        progress,
    )
    for item, scores in zip(items, replies, strict=True):
        item.scores = scores


def _key(request: LabelRequest) -> LabelKey:
    messages = tuple((m["role"], m["content"]) for m in request.messages)
    return messages, request.labels
