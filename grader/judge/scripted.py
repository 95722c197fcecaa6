"""A judge without a model, for pipeline tests and queue benchmarks.

It implements the same protocol as the real backends and is chosen by the same factory. By
default it "grades" by key-point coverage and quotes the answer's best-matching sentence, so
its verdicts depend on the answer the way a judge's should; tests pass their own script to
produce invalid replies, failures or fixed scores.

Like a model, it learns the reply's shape from the request alone: the criterion ids, the point
choices and the quote's length come from the request's JSON schema, the key points from its
rubric, and wording overlap from ``grader.text``. So this backend needs nothing from the engine
(the judge floor sits below it), and a change to the verdict schema reaches it the way it
reaches a model.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence

from grader.judge.base import Completion, Judge, JudgeRequest, LabelRequest, LabelScores
from grader.text import features, point_coverage

Script = Callable[[JudgeRequest], "str | Completion"]
LabelScript = Callable[[LabelRequest], "dict[str, float] | LabelScores"]
_SPREAD = 0.6  # how far (in label positions) the coverage script's distribution spreads
_SENTENCES = re.compile(r"[^。！？!?\n；;.]+")


def coverage_script(request: JudgeRequest) -> str:
    """A schema-valid reply that pays each criterion in proportion to its key-point coverage."""
    if request.rubric is None:
        raise ValueError("the coverage script needs the request's rubric")
    sentences = [s.strip() for s in _SENTENCES.findall(request.answer) if s.strip()]
    have = features(request.answer)
    fields = request.json_schema["properties"]
    reply: dict[str, object] = {}
    for criterion in request.rubric.criteria:
        wanted_points = criterion.key_points or [criterion.description]
        covered = sum(point_coverage(p, have) for p in wanted_points) / len(wanted_points)
        schema = fields[criterion.id]["properties"]
        points = min(schema["points"]["enum"], key=lambda p: abs(p - covered * criterion.points))
        wanted = " ".join(criterion.key_points) or criterion.description
        best = max(sentences, key=lambda s: point_coverage(wanted, features(s)), default="")
        reply[criterion.id] = {
            "evidence": best[: schema["evidence"]["maxLength"]] if points else "",
            "rationale": f"key-point coverage {covered:.0%}",
            "points": points,
        }
    reply["feedback"] = "scripted verdict"
    return json.dumps(reply, ensure_ascii=False, separators=(",", ":"))


def coverage_labels(request: LabelRequest) -> dict[str, float]:
    """A distribution centred on the label at the subject's key-point coverage.

    Labels run from the worst answer to the best (the protocol's convention), so a subject
    half covered by the answer's wording peaks in the middle label; deterministic, and it
    moves with the answer the way a model's distribution should.
    """
    subject = request.subject or request.messages[-1]["content"]
    covered = point_coverage(subject, features(request.answer))
    centre = covered * (len(request.labels) - 1)
    weights = [math.exp(-(((i - centre) / _SPREAD) ** 2)) for i in range(len(request.labels))]
    total = sum(weights)
    return {label: w / total for label, w in zip(request.labels, weights, strict=True)}


class ScriptedJudge(Judge):
    backend = "scripted"

    def __init__(
        self,
        script: Script | None = None,
        model: str = "coverage-script",
        latency_s: float = 0.0,
        label_script: LabelScript | None = None,
    ):
        self.script = script or coverage_script
        self.label_script = label_script or coverage_labels
        self.model = model
        self.latency_s = latency_s  # per batch: stands in for model time in queue tests

    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
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

    def score_labels(self, requests: Sequence[LabelRequest]) -> list[LabelScores]:
        if self.latency_s and requests:
            time.sleep(self.latency_s)
        out = []
        for request in requests:
            try:
                result = self.label_script(request)
            except Exception as exc:  # one bad item never fails the batch
                out.append(LabelScores(error=f"script failed: {exc}"))
                continue
            if isinstance(result, LabelScores):
                out.append(result)
            else:
                out.append(LabelScores(probabilities=result, mass=1.0))
        return out
