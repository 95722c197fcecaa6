"""The judge protocol: one list of requests in, one list of results out, same order.

Backends do two things. ``complete`` turns chat messages into text (the JSON-verdict mode).
``score_labels`` reads, after the messages, the model's probability of each of a few
single-token labels — one forward step, nothing generated (the probability mode). Reading the
text as a verdict, re-asking, and turning label distributions into points are the engine's job
(``grader.engine``), so this floor knows nothing of rubrics' rules. One bad item never fails
the batch: it comes back with an error.
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


class LabelRequest(BaseModel):
    """Which of ``labels`` comes next after ``messages``: the distribution is the answer.

    ``labels`` are single tokens, ordered from the worst answer to the best (a convention the
    scripted backend relies on to behave like a model). ``subject`` (what is being checked,
    e.g. a key point) and ``answer`` travel along for that backend; real models read only the
    messages.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    group: str = Field(description="the shared prefix's cache key: requests are sorted by it")
    messages: list[dict[str, str]]
    labels: tuple[str, ...] = Field(min_length=2)
    subject: str = ""
    answer: str = ""
    shared_chars: int | None = Field(
        default=None,
        ge=0,
        description="leading characters of the last message that all checks of this answer"
        " share: a backend may pad them to a cache-block boundary (grader.judge.block_align)",
    )


class LabelScores(BaseModel):
    """The model's distribution over a request's labels, or the reason there is none."""

    probabilities: dict[str, float] = Field(
        default_factory=dict, description="label -> probability, renormalised over the labels"
    )
    mass: float = Field(
        default=0.0, description="raw probability the model put on the labels before renormalising"
    )
    error: str | None = None
    transient: bool = Field(default=False, description="the error may pass if retried later")
    prompt_tokens: int = 0
    cached_tokens: int | None = None
    latency_s: float = 0.0


def prefix_waves(requests: Sequence[LabelRequest | JudgeRequest]) -> list[list[int]]:
    """The requests' indices in up to three waves that each fill the prefix cache for the next.

    An engine computes the prompts it schedules together side by side, so checks of one answer
    sent in one call each compute the answer again (and answers of one question the question's
    prefix), however good the cache. First one request per question prefix (``group``), then
    one per answer (``group`` and ``answer``), then the rest: every shared prefix is computed
    once, and each later request only adds its own question. Order within a wave is kept.
    """
    groups: set[str] = set()
    answers: set[tuple[str, str]] = set()
    waves: list[list[int]] = [[], [], []]
    for i, request in enumerate(requests):
        key = (request.group, request.answer)
        wave = 0 if request.group not in groups else 1 if key not in answers else 2
        groups.add(request.group)
        answers.add(key)
        waves[wave].append(i)
    return [wave for wave in waves if wave]


def renormalise(probabilities: dict[str, float], labels: Sequence[str]) -> LabelScores:
    """Keep the labels' share of a next-token distribution and scale it to sum to one.

    A label missing from the backend's top tokens gets 0: its probability was below every
    listed token's. If no label is listed at all, there is nothing to read.
    """
    kept = {label: probabilities.get(label, 0.0) for label in labels}
    mass = sum(kept.values())
    if mass <= 0.0:
        return LabelScores(error=f"none of the labels {'/'.join(labels)} among the top tokens")
    return LabelScores(probabilities={k: v / mass for k, v in kept.items()}, mass=mass)


class Judge(ABC):
    """A judge backend: ``complete`` turns each request's messages into text."""

    backend: str = "abstract"
    model: str = ""

    @abstractmethod
    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
        """Generate one completion per request, same order; errors as ``Completion.error``."""

    @abstractmethod
    def score_labels(self, requests: Sequence[LabelRequest]) -> list[LabelScores]:
        """Each request's next-token distribution over its labels, same order; errors as
        ``LabelScores.error``."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release the engine or connections."""
