"""Judge requests: what the judge is asked about each answer, built so the prefix is shared.

A ``VerdictPrefix`` is made once per question and anchor group: the rubric, its version, the prompt,
the rendered system message (rules, rubric, reference, anchors), the verdict schema and the
token budget. Every answer in the group reuses it and adds only its own user message, so the
backend sees byte-identical prefixes back to back. Requests are one per self-consistency
sample, on the answer as given: a suspected injection's cleaned text is an answer of its own
(``finish.injection_bound``), not a second set here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from grader.config import JudgeSettings
from grader.engine.judging import asking
from grader.engine.judging.asking import JudgeReply
from grader.engine.judging.progress import Progress, judge_each_once
from grader.engine.judging.prompts import Prompt, judge_prompt, judge_system, judge_user
from grader.engine.judging.verdict import token_budget, verdict_schema
from grader.engine.reading.injection import Finding
from grader.judge.base import Judge, JudgeRequest
from grader.models import Anchor, AnswerSignals, Question, Rubric, Submission

# What makes two requests the same: the conversation ((role, content) pairs) and the sampling
# (temperature, seed, max_tokens).
RequestKey = tuple[tuple[tuple[str, str], ...], float, int | None, int]


@dataclass(frozen=True)
class VerdictPrefix:
    """Everything a question's answers in one anchor group share in their requests."""

    question: Question
    rubric: Rubric
    rubric_version: str
    anchors: list[Anchor]
    prompt: Prompt
    system: dict[str, str]  # the rendered system message: the cached prefix
    json_schema: dict[str, Any]
    max_tokens: int
    temperature: float
    group: str  # the prefix's cache key; requests are sorted by it

    @classmethod
    def build(
        cls, question: Question, rubric: Rubric, anchors: list[Anchor], settings: JudgeSettings
    ) -> VerdictPrefix:
        prompt = judge_prompt(question.language)
        version = rubric.version
        anchor_ids = ",".join(a.id for a in anchors)  # answers with the same anchors share a prefix
        return cls(
            question=question,
            rubric=rubric,
            rubric_version=version,
            anchors=anchors,
            prompt=prompt,
            system=judge_system(prompt, question, rubric, anchors),
            json_schema=verdict_schema(rubric),
            max_tokens=min(settings.max_tokens, token_budget(rubric)),
            temperature=settings.temperature if settings.samples > 1 else 0.0,
            group=f"{question.id}@{version}+{prompt.version}#{anchor_ids}",
        )

    def requests(
        self, submission_id: str, answer: str, settings: JudgeSettings
    ) -> list[JudgeRequest]:
        """One request per self-consistency sample, differing only in the seed."""
        user = judge_user(self.prompt, self.question, self.rubric, answer, self.anchors)
        messages = [self.system, user]
        return [
            JudgeRequest(
                id=f"{submission_id}/{k}",
                group=self.group,
                messages=messages,
                json_schema=self.json_schema,
                rubric=self.rubric,
                answer=answer,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                seed=settings.seed + k,
            )
            for k in range(settings.samples)
        ]


@dataclass
class VerdictWork:
    """One subjective submission on its way through the judge."""

    submission: Submission
    prefix: VerdictPrefix
    signals: AnswerSignals | None = None
    injections: list[Finding] = field(default_factory=list)  # what the pipeline flagged
    requests: list[JudgeRequest] = field(default_factory=list)  # one per sample
    replies: list[JudgeReply] = field(default_factory=list)

    @classmethod
    def prepare(
        cls,
        submission: Submission,
        prefix: VerdictPrefix,
        signals: AnswerSignals | None,
        injections: list[Finding],
        settings: JudgeSettings,
    ) -> VerdictWork:
        requests = prefix.requests(submission.id, submission.answer, settings)
        return cls(submission, prefix, signals, injections, requests)


def ask_verdicts(
    judge: Judge,
    items: Sequence[VerdictWork],
    max_reasks: int,
    chunk: int | None = None,
    progress: Progress | None = None,
) -> None:
    """Ask the judge about every item's requests in one batch (or sub-batches of ``chunk``
    requests, re-asks within each); replies land on the items."""
    # Same question next to each other: the backend sees shared prefixes back to back.
    replies = judge_each_once(
        [item.requests for item in items],
        _request_key,
        lambda pair: pair[1].group,
        lambda requests: asking.ask(judge, requests, max_reasks),
        chunk,
        progress,
    )
    for item, got in zip(items, replies, strict=True):
        item.replies = got


def _request_key(request: JudgeRequest) -> RequestKey:
    """Requests asking the same thing: the same conversation and sampling. Hashing a tuple of
    the message strings is cheap (the shared system message's hash is computed once)."""
    messages = tuple((m["role"], m["content"]) for m in request.messages)
    return messages, request.temperature, request.seed, request.max_tokens
