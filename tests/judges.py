"""Test doubles built on the scripted backend."""

from __future__ import annotations

from collections.abc import Sequence

from grader.judge.base import Completion, JudgeRequest
from grader.judge.scripted import ScriptedJudge


class RecordingJudge(ScriptedJudge):
    """The scripted judge, keeping every batch it received so a test can inspect them.

    The backend itself keeps nothing: a long-running worker would hold every request forever.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[list[JudgeRequest]] = []

    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
        self.calls.append(list(requests))
        return super().complete(requests)
