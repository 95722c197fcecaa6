"""The judge protocol: one list of requests in, one list of completions out, same order.

Backends only turn chat messages into text (``complete``). Reading the text as a verdict and
re-asking when it is not one is the engine's job (``grader.engine.asking``), so this floor
knows nothing of the verdict's rules. One bad item never fails the batch: it comes back as a
completion with an error.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from grader.models import Rubric


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


class Judge(ABC):
    """A judge backend: ``complete`` turns each request's messages into text."""

    backend: str = "abstract"
    model: str = ""

    @abstractmethod
    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
        """Generate one completion per request, same order; errors as ``Completion.error``."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release the engine or connections."""
