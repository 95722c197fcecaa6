"""How good the grades are: agreement with human graders on the public and seed sets.

The shipped scorer's grades on the test parts, graded as a user's exam is. For every question
of the Mohler test half, the ADS test part and the seed-question sets (``lib/exams.py``:
settings none / 5 graded / 10 graded / development answers as graded), the production path: ``blanks.blank_reason`` (0 by rule), ``signals.analyze_question`` over
the exam's answers with the graded answers, off-topic answers 0 by rule, then for every other
answer ``scoring.scorer_grade.answer_evidence`` (``answer_features`` and the ``GradedPool`` neighbours),
``scorer_core.rules.decide`` (copy rule, then ``load_scorer("default")``), ``scoring.points.to_points`` (half
points) and ``scoring.scorer_grade.scorer_confidence``. The judge's reading, where the judge ran
(``python -m benchmarks.feature_table --judge vllm``, ``lib/readings.py``), is what
``grade_many`` would hand the scorer. What follows the scorer in production — the substance
rules, the conclusion cap, the injection bound — is measured on its own
(``conclusion_gate``, ``injection_binding``, ``seed_kinds``).

Figures (``grader.calibrate.metrics.agreement``, 95 % bootstrap intervals over answers):
Pearson, QWK, MAE, exact and ±1, on grades rounded to the data set's step (Mohler 0.5, ADS 1,
seeds 0.5). Beside the scorer: the e5 reference cosine alone (correlations only), the judge
alone, the similarity-weighted share of the 5 nearest graded answers alone, and, on Mohler,
grader 1 against grader 2 on the same answers. Test parts are reported once per design.
Prints one table per data set; ``--out`` keeps the whole result.

    python -m benchmarks.agreement --datasets mohler ads --out benchmarks/results/agreement.json
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from benchmarks.lib.common import code_version, command, write_result
from benchmarks.lib.datasets import load_table, settings_for_table
from benchmarks.lib.exams import Dataset, Exam, public_dataset, seed_datasets
from benchmarks.lib.readings import production_readings
from benchmarks.lib.splits import add_data_dir, use_data_dir
from grader.calibrate.metrics import agreement
from grader.calibrate.scorer_rows import ScorerRow
from grader.config import Settings
from grader.engine.judging.rule_grades import nearest_scored, zero_off_topic
from grader.engine.reading.blanks import blank_reason
from grader.engine.reading.rubrics import rubric_for
from grader.engine.scoring.confidence import caught
from grader.engine.scoring.features import JudgeReading
from grader.engine.scoring.points import to_points
from grader.engine.scoring.scorer_core.pool import GradedPool
from grader.engine.scoring.scorer_core.rules import decide
from grader.engine.scoring.scorer_grade import answer_evidence, scorer_confidence
from grader.engine.scoring.scorer_model import AnswerFeatures, ScorerSet, load_scorer
from grader.engine.signals.analysis import analyze_question
from grader.models import GradedAnswer, Submission

RATES = (0.1, 0.2, 0.3)
DATASETS = ("mohler", "ads", "seed_dev", "seed_2")


@dataclass
class Answer:
    """One scored answer of one exam: the human score and every contender's."""

    id: str
    human: float
    points: float
    score: float | None  # production's grade; None: the judge left it unscored
    decided: str  # a rule, "copy", or the scorer that decided
    without_rule: float  # the scorer's grade had off-topic answers been scored
    cosine: float | None
    knn: float | None  # the neighbours' weighted share times the points
    judge: float | None  # the judge's own grade, where the judge ran
    confidence: float | None
    without_judge: float | None  # the scorer's grade from the signals alone
    features: dict | None = None  # what answer_features gave (without the judge's)


def grade_exam(
    data: Dataset, exam: Exam, scorer: ScorerSet, embedder, settings: Settings, judged: dict
) -> list[Answer]:
    """The production path over one exam (``Pipeline.grade_many`` before and after the judge)."""
    question = next(q for q in data.bank.questions if q.id == exam.question_id)
    rubric = rubric_for(question, data.rubrics)
    subs = {i.id: Submission(id=i.id, question_id=question.id, answer=i.answer, student=i.id)
            for i in exam.cohort}  # fmt: skip
    blank = {i: blank_reason(s.answer, settings.rules.min_answer_chars) for i, s in subs.items()}
    batch = [subs[i.id] for i in exam.scored if blank[i.id] is None]
    graded = [GradedAnswer(id=g.id, question_id=question.id, answer=g.answer, score=g.score)
              for g in exam.graded]  # fmt: skip
    analysis = analyze_question(
        question, rubric, batch, embedder, settings.signals,
        cohort=[s for i, s in subs.items() if blank[i] is None], graded=graded,
    )  # fmt: skip
    pool = GradedPool.build(question, rubric, analysis.graded, analysis.vectors, scorer)
    out = []
    for item in exam.scored:
        points, found = rubric.points, judged.get(item.id)
        if blank[item.id] is not None:
            out.append(Answer(item.id, item.score, points, 0.0, str(blank[item.id]), 0.0,
                              None, None, 0.0 if found else None, None, 0.0))  # fmt: skip
            continue
        sub = subs[item.id]
        reading = None
        if found and found.get("share") is not None:
            reading = JudgeReading(found["share"], found.get("entropy"))
        read = answer_evidence(sub, question, rubric, analysis, pool, reading)
        features = read.features
        decided, share = decide(read, scorer)
        plain = features.model_copy(update={"judge_share": None, "judge_entropy": None})
        nearest = nearest_scored(analysis, item.id)
        off_topic = zero_off_topic(analysis.signals[item.id], settings.signals, nearest)
        unscored = found is not None and found["status"] != "graded" and not off_topic
        out.append(
            Answer(
                id=item.id,
                human=item.score,
                points=points,
                score=None if unscored else 0.0 if off_topic else to_points(share, points),
                decided="off_topic" if off_topic else decided,
                without_rule=to_points(share, points),
                cosine=features.reference_cosine,
                knn=None if features.knn_share is None else features.knn_share * points,
                judge=None if found is None else found.get("score"),
                confidence=None if off_topic else scorer_confidence(share, features, scorer),
                without_judge=0.0
                if off_topic
                else to_points(decide(replace(read, features=plain), scorer)[1], points),
                features=_known(plain),
            )
        )
    return out


def on_step(values: list[float], step: float) -> np.ndarray:
    """Grades on the data set's steps (half up), as an instructor records them."""
    return np.floor(np.asarray(values, dtype=float) / step + 0.5) * step


def rows_of(data: Dataset, answers: list[Answer], bootstrap: int) -> dict[str, dict]:
    """Every contender's figures on the answers it scored (n says how many)."""
    contenders = {
        "scorer": lambda a: a.score,
        "scorer without the judge": lambda a: a.without_judge if _judged(answers) else None,
        "scorer, off-topic answers scored too": lambda a: a.without_rule
        if any(x.decided == "off_topic" for x in answers) else None,
        "judge alone": lambda a: a.judge,
        "neighbour score alone": lambda a: 0.0 if a.decided in ("blank", "non_answer")
        else a.knn,
    }  # fmt: skip
    out = {}
    for label, pick in contenders.items():
        pairs = [(a, pick(a)) for a in answers if pick(a) is not None]
        if label == "neighbour score alone" and all(a.knn is None for a in answers):
            continue
        if pairs:
            scored, values = zip(*pairs, strict=True)
            out[label] = _figures(_agreement(data, list(scored), values, bootstrap, True))
    with_cosine = [a for a in answers if a.cosine is not None]
    cosine = _agreement(data, with_cosine, [a.cosine for a in with_cosine], bootstrap, False)
    out["e5 cosine alone"] = {"n": cosine.n, "pearson": _est(cosine.pearson),
                              "spearman": _est(cosine.spearman)}  # fmt: skip
    if data.graders:
        g = [data.graders[a.id] for a in answers]
        out["human–human (grader 1 vs 2)"] = _figures(
            agreement([x[0] for x in g], [x[1] for x in g], answers[0].points, bootstrap=bootstrap)
        )
    return out


def _agreement(data: Dataset, answers: list[Answer], values, bootstrap: int, grade: bool):
    """Human against ``values`` (grades on the data set's step when ``grade``), on the data
    set's points or, for the seeds, as shares of ``data.scale``."""
    human = [a.human for a in answers]
    values = list(values)
    points = answers[0].points
    if data.scale is not None:
        human = [a.human / a.points * data.scale for a in answers]
        values = [
            v / a.points * data.scale if grade else v for a, v in zip(answers, values, strict=True)
        ]
        points = data.scale
    predicted = list(on_step(values, data.step)) if grade else values
    return agreement(human, predicted, points, bootstrap=bootstrap)


def _judged(answers: list[Answer]) -> bool:
    return any(a.judge is not None for a in answers)


def _figures(a) -> dict:
    names = ("pearson", "qwk", "mae", "exact", "adjacent", "spearman", "mean_difference")
    return {"n": a.n, **{k: _est(getattr(a, k)) for k in names}}


def _est(e) -> dict:
    return {k: None if v is None else round(v, 4) for k, v in e.model_dump().items()}


def review_figures(answers: list[Answer], review_below: float) -> dict:
    """On the answers the scorer graded: large errors (a quarter of the points) caught by
    the confidence at 10 / 20 / 30 % review and below the configured threshold."""
    mine = [a for a in answers if a.confidence is not None and a.score is not None]
    if not mine:
        return {}
    errors = np.array([abs(a.score - a.human) >= 0.25 * a.points - 1e-9 for a in mine])
    sure = np.array([a.confidence for a in mine])
    flagged = sure < review_below
    return {
        "answers": len(mine),
        "large_errors": int(errors.sum()),
        "caught_at_rate": {f"{r:.0%}": round(caught(errors, -sure, r), 3) for r in RATES},
        "below_threshold": {
            "threshold": review_below,
            "reviewed": round(float(flagged.mean()), 3),
            "caught": round(float(errors[flagged].sum() / max(1, errors.sum())), 3),
        },
    }


def table_check(answers: list[Answer], table: dict[str, ScorerRow]) -> dict:
    """The live features against the feature table's (same cohort, no graded answers): the
    table the default was fit from holds what this evaluation computes."""
    compared = [(a.features, _known(table[a.id].features))
                for a in answers if a.features is not None and a.id in table]  # fmt: skip
    worst = max((abs(x[k] - y.get(k, math.inf)) for x, y in compared for k in x), default=0.0)
    return {"answers": len(compared), "largest_difference": worst}


def _known(features: AnswerFeatures) -> dict[str, float]:
    """The numeric features the answer has."""
    return {k: v for k, v in features.numbers().items() if v is not None}


def evaluate(data: Dataset, scorer, embedder, settings, judged: dict, args) -> dict:
    out: dict = {}
    for setting in dict.fromkeys(e.setting for e in data.exams):
        exams = [e for e in data.exams if e.setting == setting]
        answers = [
            a for e in exams for a in grade_exam(data, e, scorer, embedder, settings, judged)
        ]
        out[setting] = {
            "answers": len(answers),
            "questions": len(exams),
            "graded_per_question": sorted({len(e.graded) for e in exams}),
            "decided_by": dict(sorted(Counter(a.decided for a in answers).items())),
            "unscored_by_the_judge": sum(a.score is None for a in answers),
            "rows": rows_of(data, answers, args.bootstrap),
            "review": review_figures(answers, args.review_below),
        }
        if setting == "none" and data.name in ("mohler", "ads"):
            out[setting]["table_check"] = table_check(answers, args.table)
        print(f"{data.name} {setting}: {len(answers)} answers", flush=True)
    return out


def _cell(fig: dict, interval: bool = True) -> str:
    v = fig["value"]
    if v is None:
        return "—"
    if interval and fig.get("low") is not None:
        return f"{v:.3f} [{fig['low']:.2f}, {fig['high']:.2f}]"
    return f"{v:.3f}"


EVAL_METRICS = (("pearson", "Pearson"), ("qwk", "QWK"), ("mae", "MAE"), ("exact", "exact"),
                ("adjacent", "±1"))  # fmt: skip


def eval_tables(result: dict) -> list[str]:
    """One table per data set: every setting, every contender, with 95 % intervals."""
    lines = []
    for name, settings in result["datasets"].items():
        lines += ["", f"**{name}**", "",
                  "| setting | answers (graded per question) | scores | n | "
                  + " | ".join(label for _, label in EVAL_METRICS) + " |",
                  "|---|---|---|---|" + "---|" * len(EVAL_METRICS)]  # fmt: skip
        for setting, found in settings.items():
            where = f"{found['answers']} ({'/'.join(map(str, found['graded_per_question']))})"
            for label, fig in found["rows"].items():
                cells = [_cell(fig[m]) if m in fig else "" for m, _ in EVAL_METRICS]
                lines.append(
                    f"| {setting} | {where} | {label} | {fig['n']} | " + " | ".join(cells) + " |"
                )
                where = ""
    return lines


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m benchmarks.agreement", description=__doc__.split("\n\n")[0]
    )
    found.add_argument("--out", type=Path, help="write the whole result here as JSON")
    found.add_argument("--bootstrap", type=int, default=1000)
    found.add_argument(
        "--review-below",
        type=float,
        default=Settings().review.below_confidence,
        help="the confidence threshold whose review rate is reported",
    )
    found.add_argument("--no-judge", action="store_true", help="ignore the judge's readings")
    found.add_argument(
        "--datasets",
        nargs="+",
        choices=DATASETS,
        default=list(DATASETS),
        metavar="NAME",
        help=f"any of {', '.join(DATASETS)} (default: all)",
    )
    add_data_dir(found)
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    use_data_dir(args)

    from grader.embed import Embedder

    settings = settings_for_table()
    embedder = Embedder(settings.embeddings.model, batch_size=settings.embeddings.batch_size)
    scorer = load_scorer("default")
    assert scorer is not None
    judged = {} if args.no_judge else production_readings("vllm")
    args.table = {r.id: r for r in load_table()}
    started = time.perf_counter()
    result: dict = {
        "benchmark": "agreement",
        "command": command(),
        "code": code_version("grader", "benchmarks"),
        "scorer_version": scorer.version,
        "split": "test parts (benchmarks/lib/splits.py); seeds: both hand-graded sets",
        "judge_readings": len(judged),
        "review_below_confidence": args.review_below,
        "datasets": {},
    }
    chosen = [public_dataset(n) for n in ("mohler", "ads") if n in args.datasets]
    chosen += [d for d in seed_datasets() if d.name in args.datasets]
    for data in chosen:
        result["datasets"][data.name] = evaluate(data, scorer, embedder, settings, judged, args)
    result["seconds"] = round(time.perf_counter() - started, 1)
    print("\n".join(eval_tables(result)))
    if args.out:
        write_result(result, args.out)


if __name__ == "__main__":
    main()
