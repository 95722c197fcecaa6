"""A judge built on its first request, so a run that never asks one never pays its load.

The embedded judge takes 40–70 s to load, and under the judge's budget a whole exam may ask it
nothing (Chinese answers get no criterion check; a conclusion question is asked only when the
rules cannot read it). ``LazyJudge`` stands for the judge from the start and builds it, once,
when the first request arrives; concurrent first requests wait for that one build. A build
that fails fails every later request too: a model that cannot load is not loaded again per
batch. The grading service's workers stay eager: they load before they report up
(``workers.lifecycle``), so no task waits for a load.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from grader.judge.base import Completion, Judge, JudgeRequest, LabelRequest, LabelScores


class LazyJudge(Judge):
    """``build()``'s judge, built on the first request that needs it (thread-safe)."""

    def __init__(self, build: Callable[[], Judge]):
        self._build = build
        self._judge: Judge | None = None
        self._failed: Exception | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        """Whether the judge has been built (a request needed it)."""
        return self._judge is not None

    def _real(self) -> Judge:
        judge = self._judge
        if judge is not None:
            return judge
        with self._lock:
            if self._judge is None:
                if self._failed is not None:
                    raise self._failed
                try:
                    self._judge = self._build()
                except Exception as exc:
                    self._failed = exc
                    raise
            return self._judge

    # Read-only views of the built judge's (hence the ignores: the base declares plain
    # attributes); provenance reads them after the judge answered, so they build nothing early.
    @property
    def backend(self) -> str:  # type: ignore[override]
        return self._real().backend

    @property
    def model(self) -> str:  # type: ignore[override]
        return self._real().model

    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
        return self._real().complete(requests) if requests else []

    def score_labels(self, requests: Sequence[LabelRequest]) -> list[LabelScores]:
        return self._real().score_labels(requests) if requests else []

    def close(self) -> None:
        """Close the judge if it was built; an unbuilt one holds nothing."""
        with self._lock:
            if self._judge is not None:
                self._judge.close()
