"""Issue 26's misread check: how often the rules read a right conclusion as wrong.

Every ADS answer whose derived rubric has a conclusion is read by ``read_conclusion`` (the
rules alone, no judge); each ``mismatch`` is listed with the course's grade and the sentence
it was read from, so a person can check it. A mismatch on an answer the course gave half the
points or more is a candidate misread; the count that matters is the one a person confirms by
reading the candidates (the report lists them first). Nothing is fit: the rules and the
derived conclusions are the shipped ones.

    python -m benchmarks.conclusion_misreads [--part dev|test]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from benchmarks.common import RESULTS, code_version, command
from benchmarks.datasets import as_bank, load
from grader.engine.reading.conclusion_read import read_conclusion
from grader.engine.reading.rubrics import rubric_for


def misreads(part: str) -> dict:
    """Counts of the rules' decisions on ``part`` and every mismatch, candidates first."""
    items, parts, language = load("ads")
    bank = as_bank("ads", items, language)
    rubrics = {q.id: rubric_for(q, {}) for q in bank.questions}
    decisions: Counter[str] = Counter()
    mismatches = []
    for item in items:
        rubric = rubrics.get(item.question_id)
        if parts[item.id] != part or rubric is None or rubric.conclusion is None:
            continue
        reading = read_conclusion(rubric.conclusion, item.answer)
        decisions[reading.decision] += 1
        if reading.decision == "mismatch":
            mismatches.append(
                {
                    "id": item.id,
                    "question": item.question_id,
                    "course_grade": item.score,
                    "points": item.max_score,
                    "expected": rubric.conclusion.expected,
                    "read": reading.read,
                    "evidence": reading.evidence,
                }
            )
    mismatches.sort(key=lambda m: -m["course_grade"] / m["points"])
    candidates = [m for m in mismatches if m["course_grade"] >= m["points"] / 2]
    return {
        "reached": sum(decisions.values()),
        "decisions": dict(decisions),
        "candidates": len(candidates),
        "mismatches": mismatches,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("dev", "test"), default="dev")
    args = parser.parse_args()
    report = {
        "benchmark": "conclusion_misreads",
        "data": f"ADS (sas-ads train.jsonl), {args.part} part (splits.py), derived rubrics",
        "command": command(),
        "code": code_version("grader", __file__),
        **misreads(args.part),
    }
    out = RESULTS / f"conclusion_misreads_{args.part}.json"
    out.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("reached", "decisions", "candidates")}))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
