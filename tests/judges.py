"""Test doubles built on the scripted backend."""

from __future__ import annotations

from collections.abc import Sequence

from grader.judge.base import Completion, JudgeRequest, LabelRequest, LabelScores
from grader.judge.scripted import ScriptedJudge


class RecordingJudge(ScriptedJudge):
    """The scripted judge, keeping every batch it received (verdict requests from
    ``complete``, label requests from ``score_labels``) so a test can inspect them.

    The backend itself keeps nothing: a long-running worker would hold every request forever.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[list[JudgeRequest] | list[LabelRequest]] = []

    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
        self.calls.append(list(requests))
        return super().complete(requests)

    def score_labels(self, requests: Sequence[LabelRequest]) -> list[LabelScores]:
        self.calls.append(list(requests))
        return super().score_labels(requests)


class DyingJudge(ScriptedJudge):
    """The scripted judge whose engine dies after ``alive_calls`` calls, as the embedded judge's
    worker does when the kernel kills it for memory: every later request fails, transiently,
    with ``error`` (the cause ``VllmJudge`` names once its engine process has ended)."""

    def __init__(self, alive_calls: int, error: str, **kwargs):
        super().__init__(**kwargs)
        self.alive_calls, self.error = alive_calls, error

    def _alive(self) -> bool:
        self.alive_calls -= 1
        return self.alive_calls >= 0

    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
        if self._alive():
            return super().complete(requests)
        return [Completion(error=self.error, transient=True) for _ in requests]

    def score_labels(self, requests: Sequence[LabelRequest]) -> list[LabelScores]:
        if self._alive():
            return super().score_labels(requests)
        return [LabelScores(error=self.error, transient=True) for _ in requests]
