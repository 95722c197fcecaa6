"""How the scorer reads a question's few graded answers: stage-2 designs on development data.

Issue 27 asks 10 chosen graded answers per question to reach Pearson 0.74 on the rest of the
ADS test part; the shipped second stage (a ridge over the first-stage share, the nearest
graded answers' residuals, their mean and the wording model's, ``scorer_model.ScorerSet``)
gives 0.704 there. This compares other ways of reading the same graded answers, on the
development parts only (each fold's scorer fit on the other questions, ``review_queue.Folds``),
with K answers per question graded: chosen (``engine.review.suggest.choose``, as ``grader suggest``)
and five random draws. Each design maps, per question, the graded answers (their first-stage
share without the judge, their human share, their e5 cosines and wording) to a share for
every other answer; the copy rule and the rules' zeros stay as production gives them, so
only the scorer's part changes. Pearson and MAE (points) on the answers not graded.

The designs (``DESIGNS``), none of which reads the run (one answer, one grade):
- ``shipped``: production's second stage;
- ``first stage only``, ``+ mean residual``: what the graded answers add at all;
- ``e5 GP τ λ``: kernel ridge (a Gaussian process's mean) of the residual (human − first
  stage) over exp((cos − 1) / τ) of the e5 cosines, around the mean residual;
- ``wording GP λ``: the same over the TF-IDF cosines of the wording model's n-grams;
- ``graph k μ``: the residual spread over a k-nearest-neighbour graph of all the question's
  answers (graded and not: semi-supervised smoothing, μ the Laplacian's weight);
- ``isotonic``, ``linear λ``: the human share as a monotone or (slope shrunk to 1 by λ)
  linear map of the first-stage share, fit on the question's graded answers;
- ``linear + e5 GP``: the linear map, then the e5 GP of what it leaves;
- ``½ shipped + ½ X``: blends with the shipped stage.

Two bounds read the marks of the very answers they are scored on (``BOUNDS``): the shipped
grades shifted to each question's true mean, and moved by each question's best straight line.
They say how much a better reading of a question's level or scale could give at most; what
remains is the order of the answers inside a question.

    python -m benchmarks.graded_designs --out benchmarks/results/graded_designs.json
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr

from benchmarks.common import code_version, command, write_result
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
from benchmarks.suggest_designs import DRAWS
from grader.calibrate.scorer_rows import ScorerRow
from grader.engine.scoring.scorer_core.rules import COPY
from grader.engine.scoring.scorer_model import load_scorer
from grader.engine.scoring.wording import flat, wording_vectoriser


@dataclass(frozen=True)
class Block:
    """One question with K graded: what every design reads, and the shipped grades."""

    graded: list[ScorerRow]
    rest: list[ScorerRow]
    graded_base: np.ndarray  # first-stage share without the judge (a graded neighbour's)
    graded_share: np.ndarray  # human share
    rest_base: np.ndarray  # first-stage share as production gives it (judge where weighed)
    sims: np.ndarray  # e5 cosines, graded first then rest
    shipped: np.ndarray  # production's share for each rest answer
    copied: np.ndarray  # the copy rule decided it: its grade stands whatever the design
    language: str | None

    @property
    def residual(self) -> np.ndarray:
        return self.graded_share - self.graded_base

    @property
    def n(self) -> int:
        return len(self.graded)


Design = Callable[[Block], np.ndarray]


def blocks(folds: Folds, dataset: str, graded: set[str]) -> list[Block]:
    """The questions of ``dataset`` with ``graded`` graded."""
    rows = with_graded(folds.rows, graded)
    shipped = {
        i.graded.row.id: (i.graded.share, i.graded.decided)
        for i in folds.grade(rows, [CHOSEN], dataset)
    }
    scorer_of = {folds.rows[i].id: s for s, members in folds.groups for i in members}
    out = []
    for members in by_question(folds.rows, dataset).values():
        scored = [r for r in members if r.rule is None]
        g = [r for r in scored if r.id in graded]
        rest = [r for r in scored if r.id not in graded]
        if not g or not rest:
            continue
        scorer = scorer_of[scored[0].id]
        out.append(Block(
            graded=g, rest=rest,
            graded_base=np.array([scorer.base(r.features)[1] for r in g]),
            graded_share=np.array([r.share for r in g]),
            rest_base=np.array([scorer.base(r.own_features())[1] for r in rest]),
            sims=similarity(g + rest),
            shipped=np.array([shipped[r.id][0] for r in rest]),
            copied=np.array([shipped[r.id][1] == COPY for r in rest]),
            language=scored[0].features.language,
        ))  # fmt: skip
    return out


def kernel_ridge(k_graded: np.ndarray, k_rest: np.ndarray, y: np.ndarray, ridge: float):
    """Kernel ridge prediction of ``y`` around its mean."""
    mean = y.mean()
    alpha = np.linalg.solve(k_graded + ridge * np.eye(len(y)), y - mean)
    return mean + k_rest @ alpha


def e5_gp(tau: float, ridge: float) -> Design:
    def design(b: Block) -> np.ndarray:
        k = np.exp((b.sims - 1.0) / tau)
        return b.rest_base + kernel_ridge(k[: b.n, : b.n], k[b.n :, : b.n], b.residual, ridge)

    return design


def wording_gp(ridge: float) -> Design:
    def design(b: Block) -> np.ndarray:
        texts = [flat(r.answer or "") for r in b.graded + b.rest]
        try:
            x = wording_vectoriser(b.language).fit_transform(texts)
        except ValueError:  # no n-gram at all
            return b.rest_base + b.residual.mean()
        k = (x @ x.T).toarray()
        return b.rest_base + kernel_ridge(k[: b.n, : b.n], k[b.n :, : b.n], b.residual, ridge)

    return design


def graph(neighbours: int, smooth: float, tau: float = 0.02) -> Design:
    def design(b: Block) -> np.ndarray:
        w = np.exp((b.sims - 1.0) / tau)
        np.fill_diagonal(w, 0.0)
        near = np.argsort(-w, axis=1)[:, :neighbours]
        keep = np.zeros_like(w, dtype=bool)
        keep[np.arange(len(w))[:, None], near] = True
        w = np.where(keep | keep.T, w, 0.0)
        laplacian = np.diag(w.sum(axis=1)) - w
        labelled = np.zeros(len(w))
        labelled[: b.n] = 1.0
        target = np.zeros(len(w))
        mean = b.residual.mean()
        target[: b.n] = b.residual - mean
        system = np.diag(labelled) + smooth * laplacian + 1e-3 * np.eye(len(w))
        return b.rest_base + mean + np.linalg.solve(system, target)[b.n :]

    return design


def isotonic(b: Block) -> np.ndarray:
    from sklearn.isotonic import IsotonicRegression

    fit = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0)
    return fit.fit(b.graded_base, b.graded_share).predict(b.rest_base)


def linear_map(b: Block, x: np.ndarray, ridge: float) -> np.ndarray:
    """human ≈ mean + slope · (first stage − its mean), the slope shrunk towards 1."""
    xg, yg = b.graded_base, b.graded_share
    slope = (((xg - xg.mean()) * (yg - yg.mean())).sum() + ridge) / (
        ((xg - xg.mean()) ** 2).sum() + ridge
    )
    return yg.mean() + slope * (x - xg.mean())


def linear(ridge: float) -> Design:
    return lambda b: linear_map(b, b.rest_base, ridge)


def linear_gp(ridge: float, tau: float, kernel_ridge_: float) -> Design:
    def design(b: Block) -> np.ndarray:
        left = b.graded_share - linear_map(b, b.graded_base, ridge)
        k = np.exp((b.sims - 1.0) / tau)
        return linear_map(b, b.rest_base, ridge) + kernel_ridge(
            k[: b.n, : b.n], k[b.n :, : b.n], left, kernel_ridge_
        )

    return design


def half(design: Design) -> Design:
    return lambda b: 0.5 * b.shipped + 0.5 * design(b)


DESIGNS: dict[str, Design] = {
    "shipped": lambda b: b.shipped,
    "first stage only": lambda b: b.rest_base,
    "+ mean residual": lambda b: b.rest_base + b.residual.mean(),
    **{f"e5 GP τ={t} λ={r}": e5_gp(t, r) for t in (0.02, 0.05, 0.1, 0.2, 0.5) for r in (0.03, 0.1, 0.3)},
    **{f"wording GP λ={r}": wording_gp(r) for r in (0.1, 0.3, 1.0)},
    **{f"graph k={k} μ={m}": graph(k, m) for k in (5, 10, 20) for m in (0.1, 1.0, 10.0)},
    "isotonic": isotonic,
    **{f"linear λ={r}": linear(r) for r in (0.01, 0.1, 1.0)},
    "linear λ=0.1 + e5 GP τ=0.2 λ=0.03": linear_gp(0.1, 0.2, 0.03),
    "½ shipped + ½ e5 GP τ=0.5 λ=0.03": half(e5_gp(0.5, 0.03)),
    "½ shipped + ½ graph k=5 μ=0.1": half(graph(5, 0.1)),
    "½ shipped + ½ isotonic": half(isotonic),
    "½ shipped + ½ (linear + e5 GP)": half(linear_gp(0.1, 0.2, 0.03)),
}  # fmt: skip


def true_level(b: Block) -> np.ndarray:
    """A bound, not a design: the shipped grades moved by the rest's true mean residual."""
    truth = np.array([r.share for r in b.rest])
    return b.shipped + (truth - b.shipped).mean()


def true_line(b: Block) -> np.ndarray:
    """A bound, not a design: the best straight line from the shipped grade to the rest's
    true marks, per question (least squares on the very answers it is scored on)."""
    truth = np.array([r.share for r in b.rest])
    x = np.column_stack([np.ones(len(b.shipped)), b.shipped])
    coef, *_ = np.linalg.lstsq(x, truth, rcond=None)
    line: np.ndarray = x @ coef
    return line


# what no design reading the graded answers could beat by fixing a question's level or scale
BOUNDS: dict[str, Design] = {
    "bound: the rest's true level per question": true_level,
    "bound: the best line per question (fit on the rest's marks)": true_line,
}


def agreement(found: list[Block], design: Design, zeros: dict) -> tuple:
    """(Pearson, MAE in points) on the answers not graded: the copy rule's and the rules'
    grades as production gives them, the design's share for the others."""
    human, got = [], []
    for b in found:
        shares = np.where(b.copied, b.shipped, np.clip(design(b), 0.0, 1.0))
        for row, share in zip(b.rest, shares, strict=True):
            human.append(row.share * row.points)
            got.append(share * row.points)
    for row in zeros.values():
        human.append(row.share * row.points)
        got.append(0.0)
    h, g = np.array(human), np.array(got)
    return float(pearsonr(h, g).statistic), float(np.mean(np.abs(h - g)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results")
    parser.add_argument("--k", type=int, default=10, help="graded answers per question")
    args = parser.parse_args()
    rows = [r for r in load_table() if r.part == "dev"]
    folds = Folds(rows, False, load_scorer("default"))
    pickers: dict[str, Selector] = {"chosen": chosen} | {
        f"random {s}": randomly(s) for s in range(DRAWS)
    }
    result: dict = {
        "benchmark": "graded_designs",
        "command": command(),
        "code": code_version("grader", "benchmarks/*.py"),
        "split": "dev parts (benchmarks/splits.py), each fold's scorer fit on the others",
        "k": args.k,
        "designs": {name: {} for name in DESIGNS | BOUNDS},
    }
    for dataset in ("ads", "mohler"):
        questions = by_question(rows, dataset)
        for pick_name, pick in pickers.items():
            graded = selected(questions, args.k, pick)
            found = blocks(folds, dataset, graded)
            zeros = {
                r.id: r for r in rows if r.dataset == dataset and r.rule and r.id not in graded
            }
            for name, design in (DESIGNS | BOUNDS).items():
                r, mae = agreement(found, design, zeros)
                result["designs"][name].setdefault(dataset, {})[pick_name] = {
                    "pearson": round(r, 4), "mae": round(mae, 4)}  # fmt: skip
        print(dataset, "done", flush=True)
    for name, cells in result["designs"].items():
        for by_pick in cells.values():
            randoms = [v["pearson"] for k, v in by_pick.items() if k.startswith("random")]
            by_pick["random_mean_pearson"] = round(float(np.mean(randoms)), 4)
        gains = [
            cells[d][p]["pearson"] - result["designs"]["shipped"][d][p]["pearson"]
            for d in cells for p in pickers
        ]  # fmt: skip
        cells["mean_gain_over_shipped"] = round(float(np.mean(gains)), 4)
        print(f"{name:40} ads chosen {cells['ads']['chosen']['pearson']:.3f} random "
              f"{cells['ads']['random_mean_pearson']:.3f}  mohler chosen "
              f"{cells['mohler']['chosen']['pearson']:.3f} random "
              f"{cells['mohler']['random_mean_pearson']:.3f}  gain {cells['mean_gain_over_shipped']:+.4f}")  # fmt: skip
    write_result(result, args.out)


if __name__ == "__main__":
    main()
