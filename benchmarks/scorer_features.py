"""The scorer's feature table: every Mohler and ADS answer through the production signals.

Each data set becomes a bank with one question per data-set question (reference = Mohler's
desired answer, ADS's first reference; points = the data set's maximum), its rubric derived by
``grader.rubrics.rubric_for`` as for a bank without rubric files, and each question's answers
analysed together by ``grader.signals.analyze_question`` (the whole question is the cohort).
On top: the cosine to every reference (ADS has up to three), each reference's unrelated zero
in the answer's language, n-gram coverage (``grader.coverage``), and the graded neighbours of
each answer in every simulated setting (``splits.py``):

- ``graded5`` / ``graded10``: per question the first 5 / 10 answers of the part by
  ``splits.graded_sample`` are graded; the others get neighbours from them;
- ``all_other``: ADS, every development answer of the question is graded (a development
  answer's neighbours: the others; a test answer's: all of them); Mohler (an extra): the other
  answers of the question.

Each setting lists the answer's graded neighbours (ids and cosines, nearest first); graded
answers with the same text (match key) are never neighbours, they are listed apart
(``identical``). Test-part rows are computed as inputs only: nothing is fit or reported on
them. Writes one JSON line per answer (no answer text), gzipped:

    python benchmarks/scorer_features.py --out benchmarks/results/scorer_features.jsonl.gz
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from splits import Item, ads_items, ads_split, graded_sample, mohler_items, mohler_split

from grader.config import Settings
from grader.embed import Embedder
from grader.engine.coverage import coverage_points
from grader.engine.rubrics import rubric_for
from grader.engine.scorer import signal_features
from grader.engine.signals import UNRELATED, analyze_question, blank_reason
from grader.models import Bank, Question, QuestionType, Submission
from grader.text import content_chars, language_of, match_key

GRADED_K = (5, 10)


def as_bank(name: str, items: list[Item], language: str) -> Bank:
    firsts: dict[str, Item] = {}
    for item in items:
        firsts.setdefault(item.question_id, item)
    questions = [
        Question(
            id=qid,
            number=qid,
            section=name,
            type=QuestionType.SHORT_ANSWER,
            stem=first.question,
            answer=first.references[0],
            points=first.max_score,
            language=language,  # type: ignore[arg-type]
        )
        for qid, first in firsts.items()
    ]
    return Bank(name=name, questions=questions)


def question_rows(
    question: Question,
    items: list[Item],
    parts: dict[str, str],
    embedder: Embedder,
    settings: Settings,
    unrelated: dict[str, np.ndarray],
) -> list[dict]:
    """One row per answer of ``question``: the production signals and the extra features."""
    rubric = rubric_for(question, {})
    subs = [Submission(id=i.id, question_id=question.id, answer=i.answer) for i in items]
    signals = analyze_question(question, rubric, subs, embedder, settings).signals
    references = list(items[0].references)
    answer_v = embedder.encode([i.answer for i in items])
    reference_v = embedder.encode(references)
    zeros = {lang: (v @ reference_v.T).max(axis=0) for lang, v in unrelated.items()}
    cosines = answer_v @ reference_v.T
    rows = []
    for n, item in enumerate(items):
        lang = language_of(item.answer)
        features = signal_features(
            signals[item.id],
            points=rubric.points,
            ngram_points=coverage_points(rubric, item.answer),
            reference_cosines=cosines[n].tolist(),
            reference_zeros=zeros[lang].tolist(),
            answer_chars=content_chars(item.answer),
            reference_chars=content_chars(references[0]),
        )
        rows.append(
            {
                "id": item.id,
                "question_id": item.question_id,
                "part": parts[item.id],
                "score": item.score,
                "max_score": item.max_score,
                "share": item.score / item.max_score,
                "language": lang,
                "blank": blank_reason(item.answer, settings.min_answer_chars),
                "first_reference_cosine": round(float(cosines[n, 0]), 5),
                "criteria": len(rubric.criteria),
                "features": {k: _r(v) for k, v in features.model_dump().items() if v is not None},
            }
        )
    _add_cohort_z(rows, ("reference_margin", "semantic_coverage"))
    return rows


def _add_cohort_z(rows: list[dict], names: tuple[str, ...]) -> None:
    """Each feature relative to the question's whole cohort (no scores used): a z-score."""
    for name in names:
        values = np.array([r["features"][name] for r in rows])
        spread = values.std() or 1.0
        for row, value in zip(rows, values, strict=True):
            row.setdefault("cohort_z", {})[name] = _r((value - values.mean()) / spread)


def neighbours(me: int, pool: list[int], sims: np.ndarray, keys: list[str], ids: list[str]) -> dict:
    """Graded answers of ``pool`` by similarity to answer ``me`` (itself and copies apart)."""
    others = sorted(
        (j for j in pool if j != me and keys[j] != keys[me]), key=lambda j: (-sims[me, j], ids[j])
    )
    return {
        "ids": [ids[j] for j in others],
        "sims": [_r(float(sims[me, j])) for j in others],
        "identical": [ids[j] for j in pool if j != me and keys[j] == keys[me]],
    }


def add_neighbours(rows: list[dict], items: list[Item], embedder: Embedder, dataset: str) -> None:
    """Neighbour lists per setting, computed question by question."""
    by_question: dict[str, list[int]] = defaultdict(list)
    for n, item in enumerate(items):
        by_question[item.question_id].append(n)
    index = {item.id: n for n, item in enumerate(items)}
    graded_sets = {}
    for k in GRADED_K:
        chosen: set[str] = set()
        for part in ("dev", "test"):
            graded, _ = graded_sample(
                [i for i, r in zip(items, rows, strict=True) if r["part"] == part], k
            )
            chosen.update(i.id for i in graded)
        graded_sets[f"graded{k}"] = chosen
    for members in by_question.values():
        vectors = embedder.encode([items[n].answer for n in members])
        sims = vectors @ vectors.T
        keys = [match_key(items[n].answer) for n in members]
        ids = [items[n].id for n in members]
        local = {items[n].id: m for m, n in enumerate(members)}
        for m, n in enumerate(members):
            found = rows[n].setdefault("neighbours", {})
            part = rows[n]["part"]
            for setting, chosen in graded_sets.items():
                if items[n].id in chosen:
                    continue  # a graded answer is not evaluated in this setting
                pool = [local[i] for i in local if i in chosen and rows[index[i]]["part"] == part]
                found[setting] = neighbours(m, pool, sims, keys, ids)
            if dataset == "ads":
                pool = [local[i] for i in local if rows[index[i]]["part"] == "dev"]
            else:
                pool = list(range(len(members)))
            found["all_other"] = neighbours(m, pool, sims, keys, ids)


def dataset_rows(name: str, embedder: Embedder, settings: Settings) -> list[dict]:
    items, split, language = (
        (mohler_items(), mohler_split, "en") if name == "mohler" else (ads_items(), ads_split, "zh")
    )
    parts = {i.id: part for part, chosen in split(items).items() for i in chosen}
    bank = as_bank(name, items, language)
    unrelated = {lang: embedder.encode(list(texts)) for lang, texts in UNRELATED.items()}
    by_question: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        by_question[item.question_id].append(item)
    rows_by_id = {}
    for question in bank.questions:
        for row in question_rows(
            question, by_question[question.id], parts, embedder, settings, unrelated
        ):
            rows_by_id[row["id"]] = {"dataset": name, **row}
    rows = [rows_by_id[i.id] for i in items]
    add_neighbours(rows, items, embedder, name)
    return rows


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="gzipped JSONL feature table")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    settings = Settings(embed_model="multilingual-e5-small")
    embedder = Embedder(settings.embed_model, batch_size=settings.embed_batch_size)
    started = time.perf_counter()
    rows = [r for name in ("mohler", "ads") for r in dataset_rows(name, embedder, settings)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same features give the same bytes, so a rerun shows no spurious change.
    with (
        gzip.GzipFile(args.out, "wb", mtime=0) as raw,
        io.TextIOWrapper(raw, encoding="utf-8") as f,
    ):
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(
        f"{len(rows)} answers, {time.perf_counter() - started:.0f} s, "
        f"{embedder.stats.encoded} texts encoded, {embedder.stats.cache_hits} from the cache, "
        f"{os.cpu_count()} CPUs -> {args.out}"
    )


if __name__ == "__main__":
    main()
