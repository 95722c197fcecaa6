"""The decisive part: the shipped scorer's grades with and without the conclusion cap, and
how often the rules misread a right conclusion as wrong.

The cheapest faithful replay: every ADS and Mohler answer's production features are in the
scorer's feature table (``feature_table.py``), so the shipped default scorer grades each one
as ``Pipeline.grade_many`` would without a judge (the judge does not count on Chinese) — 0 for
answers a rule scored 0, ``load_scorer("default").score`` of ``setting_features`` otherwise,
the copy rule in the graded setting, half points. Settings: ``none`` (no graded answers) and
``graded10`` (the question's first 10 answers by ``splits.graded_sample`` are graded and left
out). Then ``engine.finish.conclusion.apply_conclusion`` with the conclusion ``rubric_for`` derives
from each question (derived rubrics, as for a freshly imported bank), under each design.

The default scorer was fit on the development rows, so development grades are in-sample; the
gate (a rule with a handful of choices) is chosen on the development part and the test part
is reported once. Figures: Pearson and MAE against the course's grades, and the mean grade
of the answers the course scored 0, on the data set's points.

``--misreads dev|test`` instead reads every ADS answer whose derived rubric has a conclusion
by ``read_conclusion`` (the rules alone, no judge) and lists each ``mismatch`` with the
course's grade and the sentence it was read from, candidates first (a mismatch on an answer
the course gave half the points or more), for a person to check: the count that matters is
the one a person confirms. Nothing is fit: the rules and the derived conclusions are shipped.

    python -m benchmarks.conclusion_gate --test    # writes results/conclusion_gate.json
    python -m benchmarks.conclusion_gate --misreads test   # results/conclusion_misreads_test.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.lib.common import RESULTS, code_version, command, write_result
from benchmarks.lib.datasets import TABLE, as_bank, load
from benchmarks.lib.splits import add_data_dir, graded_sample, use_data_dir
from grader.calibrate.scorer_rows import ScorerRow, read_rows, reading
from grader.engine.finish.conclusion import apply_conclusion
from grader.engine.reading.conclusion_read import read_conclusion, verdict_of
from grader.engine.reading.rubrics import rubric_for
from grader.engine.scoring.points import to_points
from grader.engine.scoring.scorer_core.rules import decide
from grader.engine.scoring.scorer_model import ScorerSet, load_scorer
from grader.models import Conclusion, Grade, GradeStatus, Method, Rubric

SETTINGS = ("none", "graded10")
# name -> (cap for a verdict, cap for the other kinds, kinds gated, verdict policy)
DESIGNS: dict[str, tuple[float, float, tuple[str, ...], str]] = {
    "no gate": (1.0, 1.0, (), "first"),
    "verdict 0, others 0.2, first verdict (shipped)": (0.0, 0.2, ("all",), "first"),
    "verdict 0.2, others 0.2, first verdict": (0.2, 0.2, ("all",), "first"),
    "verdict 0, others 0, first verdict": (0.0, 0.0, ("all",), "first"),
    "verdict 0 only, first verdict": (0.0, 1.0, ("verdict",), "first"),
    "verdict 0, others 0.2, every sentence's verdict agrees": (0.0, 0.2, ("all",), "every"),
    "verdict 0, others 0.2, an unread conclusion capped too": (0.0, 0.2, ("all",), "unread"),
}
SHIPPED = "verdict 0, others 0.2, first verdict (shipped)"
HAND_SAMPLE = 40


def shipped_grades(rows: list[ScorerRow], scorer: ScorerSet, setting: str) -> dict[str, float]:
    """Production's grade of every answer the setting evaluates (graded answers left out)."""
    shares = {r.id: r.share for r in rows}
    base = {}
    for r in rows:
        try:
            base[r.id] = scorer.base(r.own_features())[1]
        except (ValueError, StopIteration):
            continue
    texts = {r.id: r.answer for r in rows}
    grades = {}
    for r in rows:
        if r.rule is not None:
            grades[r.id] = 0.0
            continue
        if not r.scored_in(setting):
            continue
        share = decide(reading(r, setting, shares, base, texts=texts), scorer)[1]
        grades[r.id] = to_points(share, r.points)
    return grades


def graded_ids(dataset: str, part: str, setting: str) -> set[str]:
    """The answers an instructor graded in ``setting`` (not evaluated there)."""
    if setting == "none":
        return set()
    items, parts, _ = load(dataset)
    chosen = [i for i in items if parts[i.id] == part]
    return {g.id for g in graded_sample(chosen, int(setting.removeprefix("graded")))[0]}


def every_sentence_agrees(conclusion: Conclusion, answer: str) -> bool:
    """The 'every' policy: cap only when no verdict anywhere in the answer matches."""
    expected = verdict_of(conclusion.expected)
    sentences = [s for s in answer.replace("\n", "。").split("。") if s.strip()]
    verdicts = [v for v in map(verdict_of, sentences) if v is not None]
    return expected is not None and all(v[0] != expected[0] for v in verdicts)


def gated(
    grade: float, row: ScorerRow, rubric: Rubric, design: tuple[float, float, tuple, str]
) -> tuple[float, str | None]:
    """(the grade under the design, the reading's decision) for one answer."""
    verdict_cap, other_cap, kinds, policy = design
    conclusion = rubric.conclusion
    if conclusion is None or not kinds or row.answer is None:
        return grade, None
    if "all" not in kinds and conclusion.kind not in kinds:
        return grade, None
    cap = verdict_cap if conclusion.kind == "verdict" else other_cap
    capped = rubric.model_copy(update={"conclusion": conclusion.model_copy(update={"cap": cap})})
    before = Grade(submission_id=row.id, question_id=rubric.question_id,
                   status=GradeStatus.GRADED, score=grade, max_score=row.points,
                   method=Method.JUDGE)  # fmt: skip
    after = apply_conclusion(before, capped, row.answer)
    record = after.details.conclusion
    assert record is not None  # the rubric names a conclusion
    if policy == "unread" and record.decision == "undecided":
        limit = cap * row.points // 0.5 * 0.5
        return min(grade, limit), record.decision
    if (
        policy == "every"
        and conclusion.kind == "verdict"
        and record.decision == "mismatch"
        and not every_sentence_agrees(conclusion, row.answer)
    ):
        return grade, record.decision
    return float(after.score or 0.0), record.decision


def figures(human: list[float], grades: list[float]) -> dict:
    h, g = np.array(human), np.array(grades)
    zero = h == 0
    return {
        "n": len(h),
        "pearson": round(float(np.corrcoef(h, g)[0, 1]), 4),
        "mae": round(float(np.abs(h - g).mean()), 3),
        "zero_answers": int(zero.sum()),
        "mean_grade_of_zero_answers": round(float(g[zero].mean()), 3) if zero.any() else None,
    }


def evaluate(dataset: str, part: str, table: list[ScorerRow], scorer: ScorerSet) -> dict:
    items, _, language = load(dataset)
    bank = as_bank(dataset, items, language)
    rubrics = {q.id: rubric_for(q, {}) for q in bank.questions}
    rows = [r for r in table if r.dataset == dataset and r.part == part]
    out: dict = {"conclusions": {q: r.conclusion.model_dump(mode="json")
                                 for q, r in rubrics.items() if r.conclusion}}  # fmt: skip
    for setting in SETTINGS:
        grades = shipped_grades(rows, scorer, setting)
        held = graded_ids(dataset, part, setting)
        scored = [r for r in rows if r.id in grades and r.id not in held]
        human = [r.share * r.points for r in scored]
        results = {}
        for name, design in DESIGNS.items():
            pairs = [gated(grades[r.id], r, rubrics[r.question.split(":", 1)[1]], design)
                     for r in scored]  # fmt: skip
            result = figures(human, [p[0] for p in pairs])
            result["capped"] = sum(p[0] < grades[r.id] for p, r in zip(pairs, scored, strict=True))
            result["decisions"] = {d: sum(p[1] == d for p in pairs)
                                   for d in ("match", "mismatch", "undecided")}  # fmt: skip
            results[name] = result
        out[setting] = results
    return out


def hand_sample(table: list[ScorerRow]) -> list[dict]:
    """ADS development answers whose verdict the rules decided, a seeded sample to check by
    hand: is a conclusion read as wrong really wrong?"""
    items, _, language = load("ads")
    bank = as_bank("ads", items, language)
    rubrics = {q.id: rubric_for(q, {}) for q in bank.questions}
    found = []
    for r in table:
        rubric = rubrics.get(r.question.split(":", 1)[1]) if r.dataset == "ads" else None
        if r.part != "dev" or rubric is None or rubric.conclusion is None or r.answer is None:
            continue
        reading = read_conclusion(rubric.conclusion, r.answer)
        if reading.decision == "undecided":
            continue
        key = hashlib.sha256(f"conclusion-hand:{r.id}".encode()).hexdigest()
        found.append((key, {"id": r.id, "kind": rubric.conclusion.kind,
                            "expected": rubric.conclusion.expected, "human": r.share * r.points,
                            "decision": reading.decision, "read": reading.read,
                            "answer": r.answer[:120]}))  # fmt: skip
    return [f for _, f in sorted(found, key=lambda x: x[0])[:HAND_SAMPLE]]


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


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m benchmarks.conclusion_gate", description=__doc__.split("\n\n")[0]
    )
    found.add_argument("--out", type=Path, help="default: results/conclusion_gate.json, or "
                       "results/conclusion_misreads_PART.json with --misreads")  # fmt: skip
    found.add_argument("--test", action="store_true", help="also the test parts (once)")
    found.add_argument("--misreads", choices=("dev", "test"), metavar="PART",
                       help="list the rules' mismatches on ADS PART (dev or test) instead")  # fmt: skip
    add_data_dir(found)
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    use_data_dir(args)
    if args.misreads:
        return main_misreads(args.misreads, args.out)
    table = read_rows(TABLE)
    scorer = load_scorer("default")
    parts = ("dev", "test") if args.test else ("dev",)
    result = {
        "data": "ADS (sas-ads train.jsonl) and Mohler, splits.py parts; the feature table",
        "command": command(),
        "scorer": scorer.version,
        "designs": {k: list(v) for k, v in DESIGNS.items()},
        "shipped": SHIPPED,
        "results": {
            f"{d}:{p}": evaluate(d, p, table, scorer) for d in ("ads", "mohler") for p in parts
        },
        "hand_sample_ads_dev": hand_sample(table),
        "code": code_version(
            __file__,
            "grader/engine/finish/conclusion.py",
            "grader/engine/reading/conclusion_read.py",
            "grader/engine/reading/formulas.py",
        ),
    }
    for key, found in result["results"].items():
        for setting in SETTINGS:
            for name, f in found[setting].items():
                print(f"{key:12} {setting:9} {name:56} r={f['pearson']:.3f} mae={f['mae']:.2f} "
                      f"zeros={f['mean_grade_of_zero_answers']} capped={f['capped']}")  # fmt: skip
    write_result(result, args.out or RESULTS / "conclusion_gate.json")


def main_misreads(part: str, out: Path | None) -> None:
    report = {
        "benchmark": "conclusion_misreads",
        "data": f"ADS (sas-ads train.jsonl), {part} part (splits.py), derived rubrics",
        "command": command(),
        "code": code_version("grader", __file__),
        **misreads(part),
    }
    print(json.dumps({k: report[k] for k in ("reached", "decisions", "candidates")}))
    write_result(report, out or RESULTS / f"conclusion_misreads_{part}.json")


if __name__ == "__main__":
    main()
