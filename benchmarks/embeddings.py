"""Answer embeddings on the Mohler et al. (2011) short-answer data: agreement and speed.

Two questions, answered side by side in one run:

* How well does the embedding signal track human grades? Pearson and Spearman of
  cos(reference, answer) with the graders' mean (and each grader) over all 2,273 answers, and
  of the pipeline's key-point coverage (``grader.engine.signals.analysis``, against a rubric derived from each
  reference answer) — the baseline a judge must beat. The 9 answers a spreadsheet corrupted to
  ``#NAME?`` are kept and also reported apart.
* How fast is encoding on this machine? Answers/s uncached (the model loaded beforehand; a
  fresh vector cache) and cached (a new Embedder on the same cache: no model load, no model
  call), in the same process.

    python -m benchmarks.embeddings --out benchmarks/results/embeddings_e5.json
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common import ROOT, code_version

MOHLER = ROOT.parent / "shared" / "data" / "mohler" / "mohler_2011.csv"
CORRUPTED = "#NAME?"


def load_mohler(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        for key in ("score_me", "score_other", "score_avg"):
            row[key] = float(row[key])
    return rows


def correlations(x: list[float], rows: list[dict]) -> dict:
    from scipy.stats import pearsonr, spearmanr

    out = {"n": len(x)}
    for key in ("score_avg", "score_me", "score_other"):
        y = [r[key] for r in rows]
        out[key] = {
            "pearson": round(float(pearsonr(x, y).statistic), 4),
            "spearman": round(float(spearmanr(x, y).statistic), 4),
        }
    return out


def within_question(x: list[float], rows: list[dict]) -> dict:
    """Mean Pearson inside each question: what ranking one question's answers needs."""
    import numpy as np
    from scipy.stats import pearsonr

    by_question = defaultdict(list)
    for value, row in zip(x, rows, strict=True):
        by_question[row["id"]].append((value, row["score_avg"]))
    values = []
    for pairs in by_question.values():
        a, b = zip(*pairs, strict=True)
        if len(pairs) > 2 and len(set(a)) > 1 and len(set(b)) > 1:
            values.append(float(pearsonr(a, b).statistic))
    return {"questions": len(values), "mean_pearson": round(float(np.mean(values)), 4)}


def coverage_signal(rows: list[dict], embedder) -> list[float]:
    """Share of a derived rubric's key points the answer covers in meaning (grader.engine.signals.analysis)."""
    from grader.config import EmbeddingSettings, Settings
    from grader.engine.reading.rubrics import derive_rubric
    from grader.engine.signals.analysis import analyze_question
    from grader.models import Question, QuestionType, Submission

    settings = Settings(embeddings=EmbeddingSettings(model="multilingual-e5-small"))
    share = {}
    by_question = defaultdict(list)
    for i, row in enumerate(rows):
        by_question[row["id"]].append(i)
    for qid, indices in by_question.items():
        first = rows[indices[0]]
        question = Question(
            id=qid, number=qid, section="mohler", type=QuestionType.SHORT_ANSWER,
            stem=first["question"], answer=first["desired_answer"], points=5, language="en",
        )  # fmt: skip
        rubric = derive_rubric(question)
        subs = [
            Submission(id=str(i), question_id=qid, answer=rows[i]["student_answer"])
            for i in indices
        ]
        analysis = analyze_question(question, rubric, subs, embedder, settings.signals)
        for sub in subs:
            share[int(sub.id)] = analysis.signals[sub.id].coverage_points / rubric.points
    return [share[i] for i in range(len(rows))]


def pick(values: list, indices: list[int]) -> list:
    return [values[i] for i in indices]


def measure_speed(model: str, answers: list[str], batch_size: int, cache: Path) -> dict:
    """Uncached (model already loaded, empty vector cache), then cached by a fresh Embedder."""
    import numpy as np

    from grader.embed import Embedder

    started = time.perf_counter()
    cold = Embedder(model, vector_cache=cache, batch_size=batch_size)
    cold.encode(["load the model before timing"])
    load_s = time.perf_counter() - started

    started = time.perf_counter()
    vectors = cold.encode(answers)
    uncached_s = time.perf_counter() - started

    warm = Embedder(model, vector_cache=cache, batch_size=batch_size)
    started = time.perf_counter()
    again = warm.encode(answers)
    cached_s = time.perf_counter() - started
    assert warm.stats.model_calls == 0 and np.array_equal(again, vectors)
    return {
        "model_load_s": round(load_s, 2),
        "answers": len(answers),
        "distinct_answers": cold.stats.encoded - 1,
        "uncached_s": round(uncached_s, 2),
        "uncached_answers_per_s": round(len(answers) / uncached_s, 1),
        "cached_s": round(cached_s, 3),
        "cached_answers_per_s": round(len(answers) / cached_s, 1),
        "cached_speedup": round(uncached_s / cached_s, 1),
    }


def measure_agreement(model: str, rows: list[dict], batch_size: int, cache: Path) -> dict:
    import numpy as np

    from grader.embed import Embedder

    embedder = Embedder(model, vector_cache=cache, batch_size=batch_size)
    answer_v = embedder.encode([r["student_answer"] for r in rows])
    reference_v = embedder.encode([r["desired_answer"] for r in rows])
    cosine = (answer_v * reference_v).sum(axis=1).tolist()
    coverage = coverage_signal(rows, embedder)
    clean = [i for i, r in enumerate(rows) if r["student_answer"].strip() != CORRUPTED]
    corrupted = sorted(set(range(len(rows))) - set(clean))
    return {
        "reference_cosine": {
            "all": correlations(cosine, rows),
            "without_corrupted": correlations(pick(cosine, clean), pick(rows, clean)),
            "within_question": within_question(cosine, rows),
        },
        "keypoint_coverage": {
            "all": correlations(coverage, rows),
            "within_question": within_question(coverage, rows),
        },
        "corrupted_answers": {
            "count": len(corrupted),
            "mean_cosine": round(float(np.mean(pick(cosine, corrupted))), 4),
            "mean_human": round(float(np.mean([rows[i]["score_avg"] for i in corrupted])), 3),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=MOHLER, help="mohler_2011.csv")
    parser.add_argument("--model", default="multilingual-e5-small", help="embedding model")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument(
        "--only", choices=("speed", "agreement"), help="run one half (default: both)"
    )
    parser.add_argument("--out", type=Path, help="JSON results file")
    args = parser.parse_args()

    import torch

    from grader.embed import Embedder

    rows = load_mohler(args.data)
    result = {
        "benchmark": "embeddings",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "code": code_version("grader", __file__),
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "processor": platform.processor() or platform.machine(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "model": Embedder(args.model, disk_cache=False).name,
        "data": {"file": str(args.data), "answers": len(rows)},
    }
    with tempfile.TemporaryDirectory() as cache:
        if args.only in (None, "speed"):
            answers = [r["student_answer"] for r in rows]
            result["speed"] = measure_speed(args.model, answers, args.batch_size, Path(cache))
        if args.only in (None, "agreement"):
            result.update(measure_agreement(args.model, rows, args.batch_size, Path(cache)))
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
