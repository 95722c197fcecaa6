"""Judge backends behind one batch-first protocol, chosen by configuration in ``make_judge``.

Backends import their heavy dependencies (vllm, openai) only when built, so ``import grader``
stays light and works without the optional extras.
"""

from __future__ import annotations

from grader.config import Settings
from grader.errors import ConfigError
from grader.judge.base import Completion, Judge, JudgeRequest
from grader.judge.lazy import LazyJudge

__all__ = ["Completion", "Judge", "JudgeRequest", "LazyJudge", "make_judge", "served"]


def _scripted(settings: Settings) -> Judge:
    from grader.judge.scripted import ScriptedJudge

    return ScriptedJudge(latency_s=settings.judge.scripted_latency_s)


def _vllm(settings: Settings) -> Judge:
    from grader.judge.vllm_local import VllmJudge

    return VllmJudge.from_settings(settings.judge, settings.cache.dir)


def _openai(settings: Settings) -> Judge:
    from grader.judge.openai_compat import OpenAIJudge

    return OpenAIJudge.from_settings(settings.judge.openai)


_FACTORIES = {"scripted": _scripted, "vllm": _vllm, "openai": _openai}


def make_judge(settings: Settings) -> Judge | None:
    """The configured judge, or None for ``GRADER_JUDGE=none`` (subjective: needs_judge).
    It takes the whole settings: a backend reads its judge part and the model cache."""
    if settings.judge.backend == "none":
        return None
    try:
        factory = _FACTORIES[settings.judge.backend]
    except KeyError:
        raise ConfigError(f"unknown judge backend {settings.judge.backend!r}") from None
    return factory(settings)


def served(settings: Settings) -> bool:
    """Whether the configured judge is a strong one that can afford to read every criterion:
    a server (``openai``) or vLLM on a GPU. Asks torch only for the in-process backend."""
    if settings.judge.backend == "openai":
        return True
    if settings.judge.backend != "vllm":
        return False
    from grader.judge.vllm_local import _has_cuda

    return _has_cuda()
