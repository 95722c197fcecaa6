"""Any OpenAI-compatible server (typically ``vllm serve``), through the ``openai`` package.

Requests fan out asynchronously with bounded concurrency so the server's continuous batching
stays full; transient failures (connection, timeout, 429, 5xx) are retried with exponential
backoff, other errors come back as that item's error. openai types never leave this module.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

from grader.config import OpenAISettings
from grader.errors import ConfigError
from grader.judge.base import (
    Completion,
    Judge,
    JudgeRequest,
    LabelRequest,
    LabelScores,
    renormalise,
)

TOP_LOGPROBS = 20  # the most top_logprobs OpenAI's API (and vLLM's default) allows


class OpenAIJudge(Judge):
    backend = "openai"

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str = "EMPTY",
        concurrency: int = 16,
        timeout_s: float = 120.0,
        retries: int = 3,
        backoff_s: float = 0.5,
    ):
        try:
            import openai  # noqa: F401
        except ImportError as exc:
            raise ConfigError("the openai judge needs `pip install -e '.[openai]'`") from exc
        self.base_url = base_url
        self.api_key = api_key
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.model = model or ""

    @classmethod
    def from_settings(cls, settings: OpenAISettings) -> OpenAIJudge:
        return cls(
            settings.base_url,
            model=settings.model or None,
            api_key=settings.api_key.get_secret_value(),
            concurrency=settings.concurrency,
            timeout_s=settings.timeout_s,
            retries=settings.retries,
        )

    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
        async def one(client, request: JudgeRequest) -> Completion:
            started = time.monotonic()
            response = await self._create(
                client,
                messages=request.messages,
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                seed=request.seed,
                **_decoding_options(request),
            )
            if isinstance(response, _Failure):
                return Completion(error=response.error, transient=response.transient)
            return _completion(response, time.monotonic() - started)

        return self._fan_out(
            list(requests), one, lambda f: Completion(error=f.error, transient=True)
        )

    def score_labels(self, requests: Sequence[LabelRequest]) -> list[LabelScores]:
        """``max_tokens=1`` with the top logprobs of that token, read for the labels."""

        async def one(client, request: LabelRequest) -> LabelScores:
            started = time.monotonic()
            response = await self._create(
                client,
                messages=request.messages,
                max_tokens=1,
                temperature=0.0,
                logprobs=True,
                top_logprobs=TOP_LOGPROBS,
            )
            if isinstance(response, _Failure):
                return LabelScores(error=response.error, transient=response.transient)
            return _label_scores(response, request.labels, time.monotonic() - started)

        return self._fan_out(
            list(requests), one, lambda f: LabelScores(error=f.error, transient=True)
        )

    def _fan_out(self, requests: list, one, unavailable) -> list:
        """Run ``one(client, request)`` for every request with bounded concurrency."""
        if not requests:
            return []
        return asyncio.run(self._all(requests, one, unavailable))

    async def _all(self, requests: list, one, unavailable) -> list:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(
            base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=0
        )
        try:
            if not self.model:
                self.model = await self._first_model(client)
            if not self.model:
                return [unavailable(_Failure("the server lists no model", True)) for _ in requests]
            limit = asyncio.Semaphore(self.concurrency)

            async def bounded(request):
                async with limit:
                    return await one(client, request)

            return await asyncio.gather(*(bounded(r) for r in requests))
        finally:
            await client.close()

    async def _first_model(self, client) -> str:
        import openai

        try:
            models = await client.models.list()
        except openai.OpenAIError:
            return ""
        return models.data[0].id if models.data else ""

    async def _create(self, client, **arguments):
        """One chat completion, retried with backoff on transient errors; or a ``_Failure``."""
        import openai

        transient = (
            openai.APIConnectionError,
            openai.APITimeoutError,
            openai.RateLimitError,
            openai.InternalServerError,
        )
        for attempt in range(self.retries + 1):
            try:
                return await client.chat.completions.create(model=self.model, **arguments)
            except transient as exc:
                if attempt == self.retries:
                    return _Failure(f"{type(exc).__name__}: {exc}", True)
                await asyncio.sleep(self.backoff_s * 2**attempt * (1 + random.random()))
            except openai.OpenAIError as exc:
                return _Failure(f"{type(exc).__name__}: {exc}", False)
        raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class _Failure:
    error: str
    transient: bool


def _decoding_options(request: JudgeRequest) -> dict:
    """The JSON-schema constraint, and ``min_tokens`` (a vLLM extension) only when asked for."""
    options: dict = {}
    if request.structured_output:
        options["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "schema": request.json_schema, "strict": True},
        }
    if request.min_tokens:
        options["extra_body"] = {"min_tokens": request.min_tokens}
    return options


def _completion(response, latency_s: float) -> Completion:
    choice = response.choices[0] if response.choices else None
    if choice is None:
        return Completion(error="the server returned no choices")
    usage = response.usage
    details = getattr(usage, "prompt_tokens_details", None) if usage else None
    return Completion(
        text=choice.message.content or "",
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        cached_tokens=getattr(details, "cached_tokens", None),
        latency_s=latency_s,
    )


def _label_scores(response, labels: tuple[str, ...], latency_s: float) -> LabelScores:
    """The first token's top logprobs, summed per label (``"是"`` and ``" 是"`` are one)."""
    choice = response.choices[0] if response.choices else None
    content = choice.logprobs.content if choice is not None and choice.logprobs else None
    if not content:
        return LabelScores(error="the server returned no logprobs")
    by_label: dict[str, float] = {}
    for candidate in content[0].top_logprobs:
        token = candidate.token.strip()
        if token in labels:
            by_label[token] = by_label.get(token, 0.0) + math.exp(candidate.logprob)
    usage = response.usage
    details = getattr(usage, "prompt_tokens_details", None) if usage else None
    return renormalise(by_label, labels).model_copy(
        update={
            "prompt_tokens": usage.prompt_tokens if usage else 0,
            "cached_tokens": getattr(details, "cached_tokens", None),
            "latency_s": latency_s,
        }
    )
