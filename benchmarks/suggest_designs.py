"""Which answers to grade first: selection designs compared on development data (issue 27).

Data: the scorer's feature table (``results/scorer_features.jsonl.gz``), ADS and Mohler; every
design is compared on the development parts (each fold's scorer fit on the other questions,
``benchmarks.review_queue.Folds``); ``--test --design NAME`` reads the test parts once, with
the shipped scorer. K answers per question take their human scores as graded neighbours;
the rest are graded as production grades them (``review_queue.with_graded``).

Three Pearson figures per design, in points, all answers of the data set's questions:
- ``rest``: the answers not graded (rule zeros count), the issue's bar;
- ``all``: every answer, the graded ones at their human score (what the instructor ends
  with; the same answers for every design);
- ``common``: against each random draw, the answers neither graded (design, random) — a
  design cannot win there by leaving hard answers out of its own evaluation.

    python -m benchmarks.suggest_designs --out benchmarks/results/suggest_designs.json
    python -m benchmarks.suggest_designs --test --design ted --out .../suggest_designs_test.json
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr

from benchmarks.common import code_version, write_result
from benchmarks.review_queue import (
    CHOSEN,
    Folds,
    Selector,
    by_question,
    chosen,
    randomly,
    selected,
    similarity,
    with_graded,
)
from benchmarks.scorer_data import load_table
from grader.calibrate.scorer_rows import ScorerRow
from grader.engine.review.suggest import as_kernel, choose
from grader.engine.scoring.scorer_model import load_scorer
from grader.engine.scoring.wording import flat, wording_vectoriser

DRAWS = 5
Outcome = dict[str, tuple[float, float]]  # answer id -> (human points, grade points)


def outcome(folds: Folds, dataset: str, graded: set[str]) -> Outcome:
    """Every answer of ``dataset``: graded ones at their human score, rule zeros at 0, the
    rest as production grades them with ``graded`` as the question's graded answers."""
    rows = with_graded(folds.rows, graded)
    out: Outcome = {}
    for item in folds.grade(rows, [CHOSEN], dataset):
        row = item.graded.row
        out[row.id] = (row.share * row.points, item.graded.share * row.points)
    for r in folds.rows:
        if r.dataset != dataset:
            continue
        human = r.share * r.points
        if r.id in graded:
            out[r.id] = (human, human)
        elif r.rule is not None:
            out[r.id] = (human, 0.0)
    return out


def _r(found: Outcome, ids: set[str]) -> float:
    pairs = np.array([found[i] for i in sorted(ids)])
    return float(pearsonr(pairs[:, 0], pairs[:, 1]).statistic)


def figures(found: Outcome, graded: set[str]) -> dict:
    rest = set(found) - graded
    pairs = np.array([found[i] for i in sorted(rest)])
    return {
        "rest": round(_r(found, rest), 4),
        "all": round(_r(found, set(found)), 4),
        "mae_rest": round(float(np.mean(np.abs(pairs[:, 0] - pairs[:, 1]))), 4),
    }


# --- designs ------------------------------------------------------------------------------


def kmedoids(
    similarity: np.ndarray, k: int, first: list[int] | None = None, weights=None
) -> list[int]:
    """Greedy k-medoids (``engine.review.suggest.choose`` before), with forced first picks and
    per-answer weights on the coverage."""
    n = len(similarity)
    if k >= n:
        return list(range(n))
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    distance = np.maximum(1 - np.asarray(similarity, dtype=float), 0.0)
    nearest = np.full(n, distance.max() + 1.0)
    picked: list[int] = []
    for i in first or []:
        if i not in picked:
            picked.append(i)
            nearest = np.minimum(nearest, distance[:, i])
    while len(picked) < k:
        gain = (w[:, None] * np.maximum(nearest[:, None] - distance, 0.0)).sum(axis=0)
        gain[picked] = -1.0
        picked.append(int(np.argmax(gain)))
        nearest = np.minimum(nearest, distance[:, picked[-1]])
    return picked


def weighted_design(kernel: np.ndarray, k: int, ridge: float, weights: np.ndarray) -> list[int]:
    """``engine.review.suggest.choose`` (greedy experimental design) whose summed predictive
    variance counts each answer by ``weights``."""
    n = len(kernel)
    if k >= n:
        return list(range(n))
    left = np.array(kernel, dtype=float)
    picked: list[int] = []
    for _ in range(k):
        gain = (weights[:, None] * left**2).sum(axis=0) / (np.diag(left) + ridge)
        gain[picked] = -np.inf
        i = int(np.argmax(gain))
        picked.append(i)
        left = left - np.outer(left[:, i], left[i, :]) / (left[i, i] + ridge)
    return picked


def wording_kernel(texts: list[str], language: str | None) -> np.ndarray:
    """Cosines of the wording model's TF-IDF character n-grams (the graded answers' model)."""
    x = wording_vectoriser(language).fit_transform([flat(t) for t in texts])
    return (x @ x.T).toarray()


def design_kernel(e5: np.ndarray, texts: list[str], language: str | None) -> np.ndarray:
    return (np.asarray(e5) + wording_kernel(texts, language)) / 2


def _ids(rows: list[ScorerRow], picked: list[int]) -> list[str]:
    return [rows[i].id for i in picked]


def extremes_then_medoids(predicted: dict) -> Selector:
    """The lowest and highest predicted share (without the judge), then k-medoids."""

    def pick(rows: list[ScorerRow], k: int) -> list[str]:
        share = np.array([predicted[r.id][0] for r in rows])
        first = [int(np.argmin(share)), int(np.argmax(share))][: min(k, 2)]
        return _ids(rows, kmedoids(similarity(rows), k, first=first))

    return pick


def medoids_on(kernel: Callable[[list[ScorerRow]], np.ndarray]) -> Selector:
    """k-medoids over another similarity (e.g. the wording model's n-gram cosines)."""

    def pick(rows: list[ScorerRow], k: int) -> list[str]:
        return _ids(rows, kmedoids(kernel(rows), k))

    return pick


def ted(kernel: Callable[[list[ScorerRow]], np.ndarray], ridge: float) -> Selector:
    """Greedy transductive experimental design over ``kernel``: the picks that most lower a
    ridge regression's summed predictive variance on every answer."""

    def pick(rows: list[ScorerRow], k: int) -> list[str]:
        return _ids(rows, choose(as_kernel(kernel(rows)), k, ridge))

    return pick


def tfidf(rows: list[ScorerRow]) -> np.ndarray:
    return wording_kernel([r.answer or "" for r in rows], rows[0].features.language)


def e5(rows: list[ScorerRow]) -> np.ndarray:
    return similarity(rows)


def combined(rows: list[ScorerRow]) -> np.ndarray:
    return design_kernel(similarity(rows), [r.answer or "" for r in rows],
                         rows[0].features.language)  # fmt: skip


def uncertainty_medoids(predicted: dict) -> Selector:
    """k-medoids whose coverage counts each answer by its doubt (1 − confidence)."""

    def pick(rows: list[ScorerRow], k: int) -> list[str]:
        doubt = np.array([1 - predicted[r.id][1] for r in rows])
        return _ids(rows, kmedoids(similarity(rows), k, weights=doubt))

    return pick


def e5_exp(temperature: float) -> Callable[[list[ScorerRow]], np.ndarray]:
    return lambda rows: np.exp((similarity(rows) - 1) / temperature)


def centred(kernel: Callable[[list[ScorerRow]], np.ndarray]) -> Callable:
    def k(rows: list[ScorerRow]) -> np.ndarray:
        m = kernel(rows)
        c = np.eye(len(m)) - 1 / len(m)
        return c @ m @ c

    return k


def ted_doubt(predicted: dict, ridge: float) -> Selector:
    """``ted`` whose summed variance counts each answer by its doubt (1 − confidence)."""

    def pick(rows: list[ScorerRow], k: int) -> list[str]:
        doubt = np.array([1 - predicted[r.id][1] for r in rows])
        return _ids(rows, weighted_design(e5(rows), k, ridge, doubt))

    return pick


SHIPPED = "ted_e5_0.01 (shipped)"


def designs(predicted: dict) -> dict[str, Selector]:
    """Every design tried, in the order tried (docs/research/benchmarks-log.md)."""
    return {
        "kmedoids_e5 (before)": medoids_on(e5),
        "extremes_then_kmedoids": extremes_then_medoids(predicted),
        "kmedoids_doubt_weighted": uncertainty_medoids(predicted),
        "kmedoids_tfidf": medoids_on(tfidf),
        "kmedoids_combined": medoids_on(combined),
        **{f"ted_tfidf_{r:g}": ted(tfidf, r) for r in (0.01, 0.1, 1.0)},
        **{f"ted_e5_{r:g}": ted(e5, r) for r in (0.001, 0.003, 0.03, 0.1, 0.3)},
        SHIPPED: chosen,  # engine.review.suggest.choose: ted over e5, ridge 0.01
        **{f"ted_e5_centred_{r:g}": ted(centred(e5), r) for r in (0.01, 0.03, 0.1)},
        **{
            f"ted_e5_exp{t:g}_{r:g}": ted(e5_exp(t), r)
            for t, r in ((0.05, 0.01), (0.05, 0.1), (0.1, 0.1))
        },
        **{f"ted_combined_{r:g}": ted(combined, r) for r in (0.01, 0.1, 1.0)},
        "ted_e5_doubt_0.01": ted_doubt(predicted, 0.01),
    }


# --- the comparison ----------------------------------------------------------------------


def compare(folds: Folds, dataset: str, ks: tuple[int, ...], only: str | None) -> dict:
    """Per K: five random draws, then each design (``only``: the designs whose name starts
    with it): rest / all / common-with-random figures."""
    predicted = folds.predict()
    questions = by_question(folds.rows, dataset)
    out: dict = {}
    for k in ks:
        draws = [selected(questions, k, randomly(s)) for s in range(DRAWS)]
        drawn = [outcome(folds, dataset, g) for g in draws]
        cell: dict = {"random": [figures(f, g) for f, g in zip(drawn, draws, strict=True)]}
        cell["random_mean"] = {
            m: round(float(np.mean([d[m] for d in cell["random"]])), 4)
            for m in ("rest", "all", "mae_rest")
        }
        for name, pick in designs(predicted).items():
            if only and not name.startswith(only):
                continue
            graded = selected(questions, k, pick)
            found = outcome(folds, dataset, graded)
            mine = figures(found, graded)
            common = []
            for f, g in zip(drawn, draws, strict=True):
                both = set(found) - graded - g
                common.append((_r(found, both), _r(f, both)))
            mine["common"] = round(float(np.mean([c[0] for c in common])), 4)
            mine["common_random"] = round(float(np.mean([c[1] for c in common])), 4)
            cell[name] = mine
            print(dataset, k, f"{name:32}", mine, "random", cell["random_mean"], flush=True)
        out[f"K={k}"] = cell
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results")
    parser.add_argument("--test", action="store_true", help="the test parts, once")
    parser.add_argument(
        "--design", help="only the designs whose name starts so (required with --test)"
    )
    parser.add_argument("--datasets", default="ads,mohler")
    args = parser.parse_args()
    if args.test and not args.design:
        parser.error("--test reads one design, chosen on development")
    part = "test" if args.test else "dev"
    shipped = load_scorer("default")
    folds = Folds([r for r in load_table() if r.part == part], args.test, shipped)
    result: dict = {
        "benchmark": "suggest_designs",
        "code": code_version("grader", "benchmarks/*.py"),
        "split": f"{part} parts (benchmarks/splits.py)",
        "scorer": "each fold's fit on the other questions" if part == "dev" else shipped.version,
    }
    for dataset in args.datasets.split(","):
        result[dataset] = compare(folds, dataset, (5, 10), args.design)
    write_result(result, args.out)


if __name__ == "__main__":
    main()
