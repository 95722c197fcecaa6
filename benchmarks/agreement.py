"""How far the grading engine agrees with human graders on public data (Mohler et al. 2011).

``../shared/data/mohler/mohler_2011.csv`` holds 2,273 answers to 81 computer-science questions,
each scored 0–5 by two graders. Every question becomes a ``short_answer`` question (English,
5 points, reference = the instructor's desired answer) in a bank built here, and the answers go
through ``Pipeline.grade_many`` exactly as production grades them. Judge, key-point coverage
and their mean are compared with the graders' mean and with each grader (Pearson, quadratic
weighted kappa on scores rounded to integers, RMSE, MAE, exact agreement), next to the
human–human figures and the embedding baseline.

The rubric, derived from the 0–5 scale. A small judge does badly with one holistic 0–5 score
and well with a few small criteria whose points are summed in code, but Mohler references are
mostly one sentence, so cutting them into key points leaves one 5-point criterion. Every
question therefore gets the same two criteria, filled with its reference:

- ``C1`` correctness (3 points, levels 3/2/1/0): the answer's central claim means what the
  reference says, in any words, and nothing it states is wrong (its one key point is the whole
  reference, so the model-free coverage measures it against the reference too);
- ``C2`` completeness (2 points, levels 2/1/0): it covers the reference's key points (the
  reference's statements, listed as key points, which the model-free coverage also uses).

Two criteria, not three, because the evidence check lets one quote carry at most two criteria
and most Mohler answers are a single sentence. ``--rubric derived`` uses the engine's own
rubric derivation instead (what grading without an instructor rubric does), for comparison.

``--limit N`` draws a deterministic sample, seeded and stratified across questions (round
robin over the questions, each question's answers shuffled with ``--seed``); ``--questions``
keeps only the listed question ids. The nine answers a spreadsheet corrupted to ``#NAME?`` are
graded (an engine must cope) but reported apart from the metrics.

    python -m benchmarks.agreement --limit 240 --out benchmarks/results/agreement_1.5b.json
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import time
from collections import Counter, defaultdict
from pathlib import Path

from benchmarks.common import ROOT, code_version, fmt
from grader.config import JudgeSettings, OpenAISettings, Settings
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import derive_rubric, key_points_of
from grader.judge import make_judge
from grader.models import (
    Bank,
    Criterion,
    Grade,
    GradeStatus,
    Level,
    Question,
    QuestionType,
    Rubric,
    Submission,
)

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "mohler" / "mohler_2011.csv"
CORRUPT = "#NAME?"
MAX_POINTS = 5.0
SCORERS = ("judge", "coverage", "mean")
HUMANS = ("score_avg", "score_me", "score_other")

# Published with the data (shared/data/mohler/README.md), computed over all 2,273 rows.
HUMAN_HUMAN_FULL_FILE = {"pearson": 0.597, "exact_rounded": 0.556, "qwk": 0.49, "mae": 0.75}
# cosine(reference, answer) vs the graders' mean, whole file. e5: from benchmarks/embeddings.py.
EMBEDDING_BASELINES = {
    "all-MiniLM-L6-v2": {"pearson": 0.49, "source": "shared/docs/RUNTIME-NOTES.md"},
    "multilingual-e5-small": {"pearson": 0.485, "source": "benchmarks/embeddings.py"},
}


# --- the data --------------------------------------------------------------------------------


def read_rows(path: Path) -> list[dict]:
    """Rows with the three human scores as floats; a bad row fails naming its line."""
    if not path.is_file():
        raise SystemExit(f"{path}: no such file (the Mohler data lives in shared/data/mohler)")
    rows = []
    with path.open(encoding="utf-8", newline="") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            try:
                for key in HUMANS:
                    row[key] = float(row[key])
            except (KeyError, TypeError, ValueError) as exc:
                raise SystemExit(f"{path}, line {line}: bad score ({exc})") from exc
            row["line"] = line
            rows.append(row)
    return rows


def sample(
    rows: list[dict], questions: list[str] | None, limit: int | None, seed: int
) -> list[dict]:
    """The rows to grade: all, or ``limit`` of them spread evenly over the questions."""
    if questions:
        known = {r["id"] for r in rows}
        missing = [q for q in questions if q not in known]
        if missing:
            raise SystemExit(f"unknown question ids: {', '.join(missing)}")
        rows = [r for r in rows if r["id"] in questions]
    if not limit or limit >= len(rows):
        return rows
    by_question: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_question[row["id"]].append(row)
    rng = random.Random(seed)
    queues = []
    for qid in sorted(by_question, key=_question_order):
        group = list(by_question[qid])
        rng.shuffle(group)
        queues.append(group)
    picked: list[dict] = []
    while len(picked) < limit:
        for group in queues:
            if group and len(picked) < limit:
                picked.append(group.pop())
    return sorted(picked, key=lambda r: r["line"])


def _question_order(qid: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in qid.split("."))


def build_bank(rows: list[dict]) -> Bank:
    questions = {}
    for row in rows:
        questions.setdefault(
            row["id"],
            Question(
                id=row["id"],
                number=row["id"],
                section="Mohler 2011",
                type=QuestionType.SHORT_ANSWER,
                stem=row["question"].strip(),
                answer=row["desired_answer"].strip(),
                points=MAX_POINTS,
                language="en",
            ),
        )
    return Bank(name="mohler_2011", papers=["mohler_2011.csv"], questions=list(questions.values()))


def scale_rubric(question: Question) -> Rubric:
    """Correctness (3) + completeness (2): the 0–5 scale in two small criteria (module docstring)."""
    reference = str(question.answer)
    key_points = key_points_of(reference) or [reference]
    return Rubric(
        question_id=question.id,
        points=MAX_POINTS,
        criteria=[
            Criterion(
                id="C1",
                description="Correctness: the answer's main claim means what the reference "
                "answer says (other words are fine) and nothing it states is wrong",
                points=3,
                key_points=[reference],
                levels=[
                    Level(points=3, descriptor="same meaning as the reference, no errors"),
                    Level(points=2, descriptor="mostly right; a minor error or vague wording"),
                    Level(points=1, descriptor="related to the topic but largely wrong"),
                    Level(points=0, descriptor="wrong, off topic or no answer"),
                ],
            ),
            Criterion(
                id="C2",
                description="Completeness: covers the reference answer's key points",
                points=2,
                key_points=key_points,
                levels=[
                    Level(points=2, descriptor="all key points"),
                    Level(points=1, descriptor="some key points"),
                    Level(points=0, descriptor="none of them"),
                ],
            ),
        ],
        reviewed=False,
        notes="benchmark rubric: correctness + completeness against the reference",
    )


def rubrics_for(bank: Bank, design: str) -> dict[str, Rubric]:
    make = scale_rubric if design == "scale" else derive_rubric
    return {q.id: make(q) for q in bank.questions}


def submissions_of(rows: list[dict]) -> list[Submission]:
    return [
        Submission(id=f"L{r['line']}", question_id=r["id"], answer=r["student_answer"])
        for r in rows
    ]


# --- grading ---------------------------------------------------------------------------------


def grade_in_chunks(pipeline: Pipeline, submissions: list[Submission], chunk: int, on_chunk):
    """Grades by submission id, in batches of ``chunk`` kept together by question.

    Chunks rather than one call so progress shows and a partial report survives an interrupted
    run; answers to one question stay in one chunk where they fit, for the prefix cache.
    """
    ordered = sorted(submissions, key=lambda s: (_question_order(s.question_id), s.id))
    grades: dict[str, Grade] = {}
    for start in range(0, len(ordered), chunk):
        batch = ordered[start : start + chunk]
        started = time.monotonic()
        grades.update({g.submission_id: g for g in pipeline.grade_many(batch)})
        on_chunk(grades, time.monotonic() - started)
    return grades


# --- statistics ------------------------------------------------------------------------------


def round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def compare(predicted: list[float], human: list[float]) -> dict:
    """Agreement of one scorer with one human column; None where a figure is undefined."""
    from scipy.stats import pearsonr, spearmanr
    from sklearn.metrics import cohen_kappa_score

    n = len(predicted)
    if n == 0:
        return {"n": 0}
    errors = [p - h for p, h in zip(predicted, human, strict=True)]
    p_int = [round_half_up(p) for p in predicted]
    h_int = [round_half_up(h) for h in human]
    constant = len(set(predicted)) < 2 or len(set(human)) < 2
    qwk = None
    if len(set(p_int) | set(h_int)) > 1:
        qwk = float(cohen_kappa_score(p_int, h_int, weights="quadratic"))
    return {
        "n": n,
        "pearson": None if constant or n < 3 else _r(float(pearsonr(predicted, human)[0])),
        "spearman": None if constant or n < 3 else _r(float(spearmanr(predicted, human)[0])),
        "qwk": _r(qwk),
        "rmse": _r(math.sqrt(sum(e * e for e in errors) / n)),
        "mae": _r(sum(abs(e) for e in errors) / n),
        "mean_signed_error": _r(sum(errors) / n),
        "exact_rounded": _r(sum(a == b for a, b in zip(p_int, h_int, strict=True)) / n),
    }


def _r(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else round(value, 4)


# --- the report ------------------------------------------------------------------------------


def scorer_values(grade: Grade) -> dict[str, float]:
    coverage = grade.details.coverage_points
    if coverage is None:
        coverage = grade.score
    return {"judge": grade.score, "coverage": coverage, "mean": (grade.score + coverage) / 2}


def build_report(rows: list[dict], grades: dict[str, Grade], context: dict) -> dict:
    graded_rows = [
        r
        for r in rows
        if f"L{r['line']}" in grades and grades[f"L{r['line']}"].status is GradeStatus.GRADED
    ]
    clean = [r for r in graded_rows if r["student_answer"].strip() != CORRUPT]
    values = {f"L{r['line']}": scorer_values(grades[f"L{r['line']}"]) for r in graded_rows}

    metrics = {
        scorer: {
            human: compare(
                [values[f"L{r['line']}"][scorer] for r in clean], [r[human] for r in clean]
            )
            for human in HUMANS
        }
        for scorer in SCORERS
    }
    human_human = compare([r["score_me"] for r in clean], [r["score_other"] for r in clean])

    per_question: dict[str, list[float]] = defaultdict(list)
    for r in clean:
        per_question[r["id"]].append(values[f"L{r['line']}"]["judge"] - r["score_avg"])
    graded_grades = [g for g in grades.values() if g.status is GradeStatus.GRADED]
    judged = [g for g in grades.values() if g.method.value == "judge"]
    tokens = {
        key: sum(getattr(g.provenance, key) or 0 for g in grades.values())
        for key in ("prompt_tokens", "completion_tokens", "cached_tokens", "attempts")
    }
    return {
        "benchmark": "agreement",
        **context,
        "prompt_versions": sorted({g.provenance.prompt_version for g in judged}),
        "answers": len(rows),
        "graded_so_far": len(grades),
        "questions": len({r["id"] for r in rows}),
        "graded": len(graded_grades),
        "unscored": sum(g.status is GradeStatus.UNSCORED for g in grades.values()),
        "corrupt_answers": [
            {
                "line": r["line"],
                "question_id": r["id"],
                "score_avg": r["score_avg"],
                "status": grades[f"L{r['line']}"].status.value,
                "judge_score": grades[f"L{r['line']}"].score,
            }
            for r in rows
            if r["student_answer"].strip() == CORRUPT and f"L{r['line']}" in grades
        ],
        "metrics": metrics,
        "human_human_same_sample": human_human,
        "human_human_full_file": HUMAN_HUMAN_FULL_FILE,
        "embedding_baselines": EMBEDDING_BASELINES,
        "mean_score": {
            "judge": _r(_mean([values[f"L{r['line']}"]["judge"] for r in clean])),
            "score_avg": _r(_mean([r["score_avg"] for r in clean])),
        },
        "review_flags": dict(
            Counter(rr.code for g in grades.values() for rr in g.review_reasons).most_common()
        ),
        "tokens": tokens,
        "per_question_mean_signed_error": {
            q: _r(_mean(e))
            for q, e in sorted(per_question.items(), key=lambda x: _question_order(x[0]))
        },
        "per_answer": [
            {
                "line": r["line"],
                "question_id": r["id"],
                "score_avg": r["score_avg"],
                "score_me": r["score_me"],
                "score_other": r["score_other"],
                "status": grades[f"L{r['line']}"].status.value,
                **(
                    {f"{k}_score": _r(v) for k, v in values[f"L{r['line']}"].items()}
                    if f"L{r['line']}" in values
                    else {}
                ),
                "criteria": {c.id: c.points for c in grades[f"L{r['line']}"].criteria},
                "review_codes": [rr.code for rr in grades[f"L{r['line']}"].review_reasons],
            }
            for r in rows
            if f"L{r['line']}" in grades
        ],
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def print_report(report: dict) -> None:
    print(
        f"\nMohler agreement — {report['model']} ({report['backend']}, rubric {report['rubric']}):"
        f" {report['graded']} graded of {report['answers']} answers to {report['questions']}"
        f" questions, {report['unscored']} unscored, {len(report['corrupt_answers'])} '#NAME?'"
    )
    columns = ("pearson", "qwk", "rmse", "mae", "exact_rounded", "mean_signed_error")
    print(f"{'scorer':<10}{'vs':<13}" + "".join(f"{c:>18}" for c in columns))
    for scorer in SCORERS:
        for human in HUMANS:
            m = report["metrics"][scorer][human]
            print(f"{scorer:<10}{human:<13}" + "".join(f"{fmt(m.get(c)):>18}" for c in columns))
    hh = report["human_human_same_sample"]
    print(f"{'human':<10}{'me vs other':<13}" + "".join(f"{fmt(hh.get(c)):>18}" for c in columns))
    full = report["human_human_full_file"]
    print(
        f"human–human, whole file: Pearson {full['pearson']}, QWK {full['qwk']},"
        f" exact {full['exact_rounded']:.1%}, MAE {full['mae']}"
    )
    for name, base in report["embedding_baselines"].items():
        print(f"embedding baseline {name}: Pearson {fmt(base['pearson'])} ({base['source']})")
    t, tok = report["timing"], report["tokens"]
    print(
        f"timing: model load {t['model_load_s']} s, grading {t['grading_wall_s']} s,"
        f" {fmt(t['answers_per_s'])} answers/s; tokens: prompt {tok['prompt_tokens']},"
        f" cached {tok['cached_tokens']}, completion {tok['completion_tokens']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the Mohler CSV")
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON report")
    parser.add_argument(
        "--backend", choices=("vllm", "openai", "scripted"), default="vllm", help="judge backend"
    )
    parser.add_argument(
        "--model",
        default=JudgeSettings.model_fields["model"].default,
        help="packaged model name or a local model folder (vllm); the server's model (openai)",
    )
    parser.add_argument("--limit", type=int, default=None, help="grade a sample of N answers")
    parser.add_argument(
        "--questions", default=None, help="comma-separated question ids, e.g. 1.1,2.3"
    )
    parser.add_argument("--seed", type=int, default=0, help="sampling seed for --limit")
    parser.add_argument(
        "--rubric", choices=("scale", "derived"), default="scale", help="rubric design"
    )
    parser.add_argument("--chunk", type=int, default=48, help="answers per grade_many call")
    args = parser.parse_args()

    if args.backend == "openai":
        judge = JudgeSettings(backend="openai", openai=OpenAISettings(model=args.model))
    else:
        judge = JudgeSettings(backend=args.backend, model=args.model)
    settings = Settings(judge=judge)
    questions = [q.strip() for q in args.questions.split(",")] if args.questions else None
    rows = sample(read_rows(args.data), questions, args.limit, args.seed)
    bank = build_bank(rows)
    context = {
        "model": args.model,
        "backend": args.backend,
        "rubric": args.rubric,
        "data": str(args.data),
        "limit": args.limit,
        "seed": args.seed,
        "code": code_version("grader", "prompts", __file__),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }

    started = time.monotonic()
    judge = make_judge(settings)
    load_s = time.monotonic() - started
    pipeline = Pipeline(bank, rubrics_for(bank, args.rubric), judge, settings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    elapsed = [0.0]

    def checkpoint(grades: dict[str, Grade], chunk_s: float) -> None:
        elapsed[0] += chunk_s
        timing = {
            "model_load_s": round(load_s, 2),
            "grading_wall_s": round(elapsed[0], 2),
            "answers_per_s": round(len(grades) / elapsed[0], 4) if elapsed[0] else None,
        }
        report = build_report(rows, grades, {**context, "timing": timing})
        args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", "utf-8")
        print(f"[agreement] {len(grades)}/{len(rows)} graded, {elapsed[0]:.0f} s", flush=True)

    try:
        grade_in_chunks(pipeline, submissions_of(rows), args.chunk, checkpoint)
    finally:
        if judge is not None:
            judge.close()
    print_report(json.loads(args.out.read_text(encoding="utf-8")))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
