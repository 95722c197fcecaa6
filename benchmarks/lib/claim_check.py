"""``seed_kinds --claim-check``: the judge's claim check on every decisive part the rules left
absent in the development seed answers, against the instructor's criterion points.

Each such part is asked of the judge ("does the answer state <part>?", against an empty answer:
``judging.claim_check``), as grading asks it. A part counts as credited where the instructor
gave its criterion at least half its points. Per answer language and margin: the parts stated
and how many of them were credited; ``scoring.judge_trust.fit_claims`` then keeps a margin, or
none, which ``judge_trust.store_claims`` writes into the judge model's entry of a trust file.
"""

from __future__ import annotations

import time
from collections import defaultdict

from benchmarks.lib.common import ROOT
from grader.bank.files import load_bank
from grader.config import JudgeSettings, Settings
from grader.engine.judging.claim_check import ClaimAsk, judge_claims
from grader.engine.reading.claims.parts import read_parts
from grader.engine.reading.rubrics import load_rubrics
from grader.engine.scoring import judge_trust
from grader.judge import make_judge
from grader.models import Question, Rubric
from grader.text import language_of

CREDITED = 0.5  # of a criterion's points, from the instructor: its parts count as credited


def claim_readings(seeds: list[dict], judge_backend: str) -> tuple[list[dict], str, float]:
    """One row per part asked (language, gap, credited, kind), the judge's model, seconds."""
    questions: dict[str, Question] = {}
    rubrics: dict[str, Rubric] = {}
    for path in sorted((ROOT / "rubrics").glob("*.yaml")):
        bank = load_bank(path)
        rubrics.update(load_rubrics(path, bank))
        questions.update((q.id, q) for q in bank.questions)
    asks, rows = [], {}
    for s in seeds:
        question, rubric = questions[s["question_id"]], rubrics.get(s["question_id"])
        if rubric is None:
            continue
        points = {c.id: c.points for c in rubric.criteria}
        for k, part in enumerate(read_parts(s["answer"], rubric, question.stem)):
            if part.status != "absent":
                continue
            key = f"{s['id']}/part{k}"
            asks.append(ClaimAsk(key, question, part.claim, s["answer"]))
            given = s["human_scores"].get(part.criterion, 0.0)
            rows[key] = {
                "language": language_of(s["answer"]),
                "credited": given >= CREDITED * points[part.criterion],
                "kind": s["kind"],
            }
    judge = make_judge(Settings(judge=JudgeSettings(backend=judge_backend)))  # type: ignore[arg-type]
    started = time.perf_counter()
    gaps = judge_claims(judge, asks)
    seconds = time.perf_counter() - started
    read = [{**rows[key], "gap": gap} for key, gap in gaps.items()]
    return read, judge.model, seconds


def margin_table(read: list[dict]) -> dict:
    """Per language and margin: parts stated and the share of them the instructor credited."""
    by_language: dict[str, list[dict]] = defaultdict(list)
    for row in read:
        by_language[row["language"]].append(row)
    table = {}
    for language, rows in sorted(by_language.items()):
        table[language] = {
            "parts": len(rows),
            "credited": sum(r["credited"] for r in rows),
            "margins": {
                f"{m:.2f}": {
                    "stated": len(stated := [r for r in rows if r["gap"] >= m]),
                    "credited": sum(r["credited"] for r in stated),
                    "stated_by_kind": _kinds(stated),
                }
                for m in judge_trust.MARGINS
            },
        }
    return table


def _kinds(rows: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        counts[row["kind"]] += 1
    return dict(sorted(counts.items()))
