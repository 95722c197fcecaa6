"""The judge protocol: one list of requests in, one list of replies out, same order.

Backends only turn chat messages into text (``complete``); reading the text into a verdict,
and re-asking when it is not one, happens here once for every backend. One bad item never
fails the batch: it comes back as a reply with an error.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from grader.errors import JudgeProtocolError
from grader.models import Rubric, Verdict
from grader.verdict import parse_verdict


class JudgeRequest(BaseModel):
    """Judge one answer against one rubric. ``group`` is the cache key of the shared prefix."""

    model_config = ConfigDict(frozen=True)

    id: str
    group: str = Field(description="question id + rubric and prompt version: same prefix")
    messages: list[dict[str, str]]
    json_schema: dict[str, Any]
    rubric: Rubric | None = Field(default=None, description="what the reply is checked against")
    answer: str = ""
    max_tokens: int = 512
    min_tokens: int = Field(
        default=0, ge=0, description="generate at least this many tokens: fixed-length benchmarks"
    )
    structured_output: bool = Field(
        default=True,
        description="decode constrained to json_schema; off only to measure what it costs",
    )
    temperature: float = 0.0
    seed: int | None = None


class Completion(BaseModel):
    """What a backend produced for one request: text, or an error."""

    text: str | None = None
    error: str | None = None
    transient: bool = Field(default=False, description="the error may pass if retried later")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    latency_s: float = 0.0


class JudgeReply(BaseModel):
    """A verdict, or the reason there is none, with the cost of getting it."""

    verdict: Verdict | None = None
    error: str | None = None
    transient: bool = False
    raw: str | None = None
    attempts: int = 1
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    latency_s: float = 0.0


REASK_NOTE = {
    "zh": "上一次的回复无效：{reason}。请严格按照要求的JSON格式重新输出，不要输出其他内容。",
    "en": "Your previous reply was invalid: {reason}. Reply again with only the required JSON.",
}


class Judge(ABC):
    """A judge backend. Subclasses implement ``complete``; callers use ``judge``."""

    backend: str = "abstract"
    model: str = ""

    @abstractmethod
    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
        """Generate one completion per request, same order; errors as ``Completion.error``."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release the engine or connections."""

    def judge(self, requests: Sequence[JudgeRequest], max_reasks: int = 2) -> list[JudgeReply]:
        """Verdicts for ``requests``; invalid replies are re-asked in batches, ``max_reasks`` times."""
        replies = [JudgeReply(attempts=0) for _ in requests]
        pending = list(range(len(requests)))
        current = list(requests)
        for attempt in range(max_reasks + 1):
            if not pending:
                break
            started = time.monotonic()
            completions = self.complete([current[i] for i in pending])
            if len(completions) != len(pending):
                raise JudgeProtocolError(
                    f"{self.backend} returned {len(completions)} completions for {len(pending)} requests"
                )
            elapsed = time.monotonic() - started
            retry = []
            for i, completion in zip(pending, completions, strict=True):
                reply = replies[i]
                reply.attempts = attempt + 1
                reply.prompt_tokens += completion.prompt_tokens
                reply.completion_tokens += completion.completion_tokens
                if completion.cached_tokens is not None:
                    reply.cached_tokens = (reply.cached_tokens or 0) + completion.cached_tokens
                reply.latency_s += completion.latency_s or elapsed
                reply.raw = completion.text
                if completion.error is not None:
                    reply.error, reply.transient = completion.error, completion.transient
                    continue  # a backend failure is not cured by re-asking at once
                rubric = requests[i].rubric
                if rubric is None:
                    raise ValueError("judge() needs requests with a rubric; use complete()")
                try:
                    reply.verdict = parse_verdict(completion.text or "", rubric)
                    reply.error = None
                except JudgeProtocolError as exc:
                    reply.error = str(exc)
                    current[i] = _reask(requests[i], completion.text or "", str(exc))
                    retry.append(i)
            pending = retry
        return replies


def _reask(request: JudgeRequest, reply: str, reason: str) -> JudgeRequest:
    """The same conversation plus the bad reply and why: the cached prefix stays intact."""
    language = (
        "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in request.messages[0]["content"]) else "en"
    )
    messages = [
        *request.messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": REASK_NOTE[language].format(reason=reason)},
    ]
    return request.model_copy(
        update={"messages": messages, "max_tokens": int(request.max_tokens * 1.5)}
    )
