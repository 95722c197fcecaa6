"""A judge without a model, for pipeline tests and queue benchmarks.

It implements the same protocol as the real backends and is chosen by the same factory. By
default it "grades" by key-point coverage and quotes the answer's best-matching sentence, so
its verdicts depend on the answer the way a judge's should; tests pass their own script to
produce invalid replies, failures or fixed scores.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence

from grader.coverage import criterion_coverage, features, point_coverage
from grader.judge.base import Completion, Judge, JudgeRequest
from grader.verdict import EVIDENCE_MAX_CHARS, point_choices

Script = Callable[[JudgeRequest], "str | Completion"]
_SENTENCES = re.compile(r"[^。！？!?\n；;.]+")


def coverage_script(request: JudgeRequest) -> str:
    """A schema-valid reply that pays each criterion in proportion to its key-point coverage."""
    sentences = [s.strip() for s in _SENTENCES.findall(request.answer) if s.strip()]
    reply: dict[str, object] = {}
    for criterion in request.rubric.criteria:
        covered = criterion_coverage(criterion, request.answer)
        choices = point_choices(criterion)
        points = min(choices, key=lambda p: abs(p - covered * criterion.points))
        wanted = " ".join(criterion.key_points) or criterion.description
        best = max(sentences, key=lambda s: point_coverage(wanted, features(s)), default="")
        reply[criterion.id] = {
            "evidence": best[:EVIDENCE_MAX_CHARS] if points else "",
            "rationale": f"key-point coverage {covered:.0%}",
            "points": points,
        }
    reply["feedback"] = "scripted verdict"
    return json.dumps(reply, ensure_ascii=False, separators=(",", ":"))


class ScriptedJudge(Judge):
    backend = "scripted"

    def __init__(
        self, script: Script | None = None, model: str = "coverage-script", latency_s: float = 0.0
    ):
        self.script = script or coverage_script
        self.model = model
        self.latency_s = latency_s  # per batch: stands in for model time in queue tests
        self.calls: list[list[JudgeRequest]] = []  # every batch received, for tests

    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
        self.calls.append(list(requests))
        if self.latency_s:
            time.sleep(self.latency_s)
        out = []
        for request in requests:
            try:
                result = self.script(request)
            except Exception as exc:  # one bad item never fails the batch
                out.append(Completion(error=f"script failed: {exc}"))
                continue
            if isinstance(result, Completion):
                out.append(result)
            else:
                out.append(Completion(text=result, completion_tokens=len(result) // 3))
        return out
