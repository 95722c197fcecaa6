"""The embedded judge's readings of the public data sets' answers, as the feature table and
the agreement read them.

``python -m benchmarks.feature_table --judge vllm`` appends, per judged answer, the
probability judge's reading (expected points over the points, mean entropy of the label
distributions) to ``results/scorer_judge_<backend>.jsonl``; ``--past-off-topic`` reads
instead the answers the off-topic rule zeroed unread, into ``..._offtopic.jsonl``. A reading
records the prompt version: when the judge's prompt changes, delete the file and run again
(two versions in one data set are refused; Mohler's English and ADS's Chinese prompts differ).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from benchmarks.lib.common import RESULTS
from grader.calibrate.scorer_rows import JudgeSeen


def readings_path(backend: str, past_off_topic: bool = False) -> Path:
    """Production's readings; ``past_off_topic``: those of the answers the off-topic rule
    zeroed unread, read past the rule."""
    return RESULTS / f"scorer_judge_{backend}{'_offtopic' if past_off_topic else ''}.jsonl"


def judge_readings(backend: str = "vllm", past_off_topic: bool = False) -> dict[str, dict]:
    """Readings by answer id; one prompt version per data set (each has one language, and
    each language its own prompt; a changed prompt means a new run)."""
    path = readings_path(backend, past_off_topic)
    if not path.exists():
        return {}
    found = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    versions: dict[str, set[str]] = defaultdict(set)
    for r in found:
        if r.get("prompt_version"):
            versions[r["dataset"]].add(r["prompt_version"])
    mixed = {name: sorted(v) for name, v in versions.items() if len(v) > 1}
    if mixed:
        raise SystemExit(f"{path} mixes prompt versions {mixed}: delete and rerun")
    return {r["id"]: r for r in found}


def production_readings(backend: str = "vllm") -> dict[str, dict]:
    """What production's judge reads: the readings, and for an answer those runs' off-topic
    rule zeroed unread but today's rule grades (it sits among its classmates), its reading
    taken past the rule."""
    readings = judge_readings(backend)
    for answer_id, found in judge_readings(backend, past_off_topic=True).items():
        if readings.get(answer_id, {}).get("share") is None:
            readings[answer_id] = found
    return readings


def judge_seen(found: dict | None) -> JudgeSeen | None:
    """A reading line as the table's ``JudgeSeen``; None when the judge gave no reading."""
    if found is None or found.get("share") is None:
        return None
    return JudgeSeen(share=found["share"], entropy=found.get("entropy"), score=found.get("score"))
