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
