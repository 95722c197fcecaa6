"""Issue 26, item 6: does the judge's budget move any grade? The development parts, both plans.

The ADS development part (Chinese) and the Mohler development half (English) through the
whole grade (``Pipeline.grade_many``: e5 embeddings, rubrics derived as ``grader grade``
derives them, the shipped scorer, no graded answers) once per judge plan, with the scripted
judge standing in for the model: on Chinese answers the ``budget`` plan asks it nothing, so
an unchanged score shows that no judge reading reaches a Chinese grade; on English answers
both plans ask the same checks. Reported per data set and plan: judge requests, Pearson and
MAE with the human scores, and how many answers got the same score in both plans.

    python -m benchmarks.judge_plan_dev --out benchmarks/results/judge_plan_dev.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import code_version, command
from benchmarks.datasets import as_bank, load
from benchmarks.judge_plans import CountingJudge
from grader.config import JudgeSettings, ScorerSettings, Settings
from grader.embed import make_embedder
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import rubric_for
from grader.judge.scripted import ScriptedJudge
from grader.models import Submission

PLANS = ("budget", "full")


def dev_part(name: str, plans: tuple[str, ...] = PLANS) -> dict[str, Any]:
    """One data set's development part graded once per plan."""
    items, parts, language = load(name)
    dev = [i for i in items if parts[i.id] == "dev"]
    bank = as_bank(name, items, language)
    rubrics = {q.id: rubric_for(q, {}) for q in bank.questions}
    submissions = [Submission(id=i.id, question_id=i.question_id, answer=i.answer) for i in dev]
    human = np.array([i.score for i in dev])
    embedder = make_embedder(Settings())
    scores: dict[str, np.ndarray] = {}
    out: dict[str, Any] = {"answers": len(dev), "language": language, "plans": {}}
    for plan in plans:
        judge = CountingJudge(ScriptedJudge(), {s.id: language for s in submissions})
        settings = Settings(
            judge=JudgeSettings(backend="scripted", plan=plan),
            scorer=ScorerSettings(choice="default"),
        )
        pipeline = Pipeline(bank, rubrics, judge, settings, embedder=embedder)
        grades = pipeline.grade_many(submissions, cohort=submissions)
        got = np.array([g.score if g.score is not None else np.nan for g in grades])
        scores[plan] = got
        ok = ~np.isnan(got)
        out["plans"][plan] = {
            "judge_requests": sum(judge.requests.values()),
            "scored": int(ok.sum()),
            "pearson": round(float(np.corrcoef(human[ok], got[ok])[0, 1]), 4),
            "mae": round(float(np.mean(np.abs(human[ok] - got[ok]))), 3),
            "split_by_coverage": sum(g.details.split == "coverage" for g in grades),
        }
        print(f"[plan-dev] {name} {plan}: {out['plans'][plan]}", flush=True)
    a, b = (scores[p] for p in plans[:2])
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    out["same_score"] = int(same.sum())
    out["max_gap"] = float(np.nanmax(np.abs(a - b))) if (~np.isnan(a - b)).any() else 0.0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data", default="ads,mohler", help="comma-separated: ads, mohler")
    args = parser.parse_args()
    report = {
        "benchmark": "judge_plan_dev",
        "command": command(),
        "code": code_version("grader", __file__),
        "judge": "scripted (stands in for the model: the question is whether it reaches a grade)",
        "parts": {name: dev_part(name) for name in args.data.split(",") if name},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
