"""Ask a judge for verdicts: completions read against the rubric, invalid replies re-asked.

Backends only turn chat messages into text (``Judge.complete``); reading that text as a verdict
and re-asking when it is not one happens here, once for every backend, because what counts as
a valid verdict is the engine's contract (``grader.engine.judging.verdict``), not the backend's. So the
judge floor never imports the engine. One bad item never fails the batch: it comes back as a
reply with an error.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from pydantic import BaseModel

from grader.engine.judging.verdict import parse_verdict
from grader.errors import JudgeProtocolError
from grader.judge.base import Judge, JudgeRequest
from grader.models import Verdict

REASK_NOTE = {
    "zh": "上一次的回复无效：{reason}。请严格按照要求的JSON格式重新输出，不要输出其他内容。",
    "en": "Your previous reply was invalid: {reason}. Reply again with only the required JSON.",
}


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


def ask(judge: Judge, requests: Sequence[JudgeRequest], max_reasks: int = 2) -> list[JudgeReply]:
    """Verdicts for ``requests``, same order; invalid replies are re-asked in batches,
    ``max_reasks`` times. Each request needs its ``rubric``: the reply is checked against it."""
    replies = [JudgeReply(attempts=0) for _ in requests]
    pending = list(range(len(requests)))
    current = list(requests)
    for attempt in range(max_reasks + 1):
        if not pending:
            break
        started = time.monotonic()
        completions = judge.complete([current[i] for i in pending])
        if len(completions) != len(pending):
            raise JudgeProtocolError(
                f"{judge.backend} returned {len(completions)} completions for {len(pending)} requests"
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
                raise ValueError("ask() needs requests with a rubric; use Judge.complete()")
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
