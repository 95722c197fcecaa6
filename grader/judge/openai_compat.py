"""Any OpenAI-compatible server (typically ``vllm serve``), through the ``openai`` package.

Requests fan out asynchronously with bounded concurrency so the server's continuous batching
stays full; transient failures (connection, timeout, 429, 5xx) are retried with exponential
backoff, other errors come back as that item's error. openai types never leave this module.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence

from grader.config import Settings
from grader.errors import ConfigError
from grader.judge.base import Completion, Judge, JudgeRequest


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
    def from_settings(cls, settings: Settings) -> OpenAIJudge:
        return cls(
            settings.openai_base_url,
            model=settings.openai_model or None,
            api_key=settings.openai_api_key.get_secret_value(),
            concurrency=settings.openai_concurrency,
            timeout_s=settings.openai_timeout_s,
            retries=settings.openai_retries,
        )

    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
        if not requests:
            return []
        return asyncio.run(self._complete_all(list(requests)))

    async def _complete_all(self, requests: list[JudgeRequest]) -> list[Completion]:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(
            base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=0
        )
        try:
            if not self.model:
                self.model = await self._first_model(client)
            if not self.model:
                return [
                    Completion(error="the server lists no model", transient=True) for _ in requests
                ]
            limit = asyncio.Semaphore(self.concurrency)
            return await asyncio.gather(*(self._one(client, limit, r) for r in requests))
        finally:
            await client.close()

    async def _first_model(self, client) -> str:
        import openai

        try:
            models = await client.models.list()
        except openai.OpenAIError:
            return ""
        return models.data[0].id if models.data else ""

    async def _one(self, client, limit: asyncio.Semaphore, request: JudgeRequest) -> Completion:
        import openai

        transient = (
            openai.APIConnectionError,
            openai.APITimeoutError,
            openai.RateLimitError,
            openai.InternalServerError,
        )
        async with limit:
            for attempt in range(self.retries + 1):
                started = time.monotonic()
                try:
                    response = await client.chat.completions.create(
                        model=self.model,
                        messages=request.messages,
                        max_tokens=request.max_tokens,
                        temperature=request.temperature,
                        seed=request.seed,
                        **_decoding_options(request),
                    )
                except transient as exc:
                    if attempt == self.retries:
                        return Completion(error=f"{type(exc).__name__}: {exc}", transient=True)
                    await asyncio.sleep(self.backoff_s * 2**attempt * (1 + random.random()))
                    continue
                except openai.OpenAIError as exc:
                    return Completion(error=f"{type(exc).__name__}: {exc}")
                return _completion(response, time.monotonic() - started)
        raise AssertionError("unreachable")  # pragma: no cover


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
