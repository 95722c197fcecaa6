"""Which answers to grade first (``grader suggest``), and the review queue's budget.

On the public data sets (below), or on the hand-graded seed answers through the whole
production grade (``--seeds``; development sets 1 + 3, or held-out set 2 with
``--held-out``: ``lib/seed_queue.py``).

Data: the scorer's feature table (``results/scorer_features.jsonl.gz``), ADS and Mohler, their
development parts for every choice made here, the test parts reported once (``--test``).

(a) Expected error: out-of-fold development grades (production's procedure: per fold of
    questions the shipped design fit on the other questions, every graded-answer setting),
    replayed as production gives them (``review_replay``), those the ranking orders (model
    scored, no hard reason): |grade − human| as a share of the points by least squares on the
    signals a grade records (``engine.review_queue.error_signals_of``: 1 − confidence, the
    gaps to the nearest graded answers' scores and to their mean, the coverage gap, the copy
    rule); ``--fit`` writes ``engine/review_error.json``. The designs tried: the research
    log (docs/research/benchmarks-log.md, "Expected error").
(b) Answers to grade first: per question, K answers are the instructor's (their human scores
    become the graded neighbours, as ``grader grade --graded`` reads them), chosen by
    ``engine.suggest.choose`` (greedy experimental design over the e5 cosines, as ``grader
    suggest``; the designs compared: docs/research/benchmarks-log.md, "Answers to grade
    first"),
    against K random answers (five seeded draws) and against strata of the scorer's predicted
    share without the judge (each stratum's most typical answer). The rest are graded as
    production grades them (judge reading, neighbours, copy rule; rule zeros count as 0):
    Pearson and MAE on the rest, in points. On development the scorer of each fold is fit on
    the other questions; on test it is the shipped one (fit on development).
(c) The queue, as production fills it (``review_replay``: the graded-neighbour rescue of
    off-topic zeros, the substance and conclusion rules, the hard reasons on top of the
    budget; what it leaves out is said there): with those K chosen graded, per question the
    hard answers plus the top 10, 20, 30 % of the question's answers by expected error (on
    development each fold by the line fit on the other folds; on test the shipped one) or by
    the confidence alone; the share of all large errors (≥ 25 % of the points, rule zeros
    included) it holds, against a random queue of the same size (its expectation) and the
    best any ranking could do. Pearson and MAE in (b) still grade as before: rule zeros 0,
    no rescue, no substance or conclusion rule.

    python -m benchmarks.review_queue --fit --out benchmarks/results/review_queue.json
    python -m benchmarks.review_queue --test --out benchmarks/results/review_queue_test.json
    python -m benchmarks.review_queue --seeds [--held-out]
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr

from benchmarks.lib.common import code_version, write_result
from benchmarks.lib.datasets import load_table
from benchmarks.lib.replay import LARGE, RATES, Answer, Ranker, catch, production
from benchmarks.lib.splits import add_data_dir, use_data_dir
from grader.calibrate.scorer_cv import Graded, grade_rows, question_split
from grader.calibrate.scorer_fit import SETTINGS, SHIPPED, fit_stages
from grader.calibrate.scorer_rows import Neighbours, ScorerRow
from grader.engine.review.queue import ERROR_MODEL, SIGNALS, error_share
from grader.engine.review.suggest import as_kernel, choose
from grader.engine.scoring.scorer_grade import scorer_confidence
from grader.engine.scoring.scorer_model import ScorerSet, load_scorer

CHOSEN = "chosen"  # the setting whose graded answers are a selection


def similarity(rows: Sequence[ScorerRow]) -> np.ndarray:
    """Cosines between one question's answers, from their all-other neighbours (copies: 1)."""
    index = {r.id: i for i, r in enumerate(rows)}
    out = np.eye(len(rows))
    for i, r in enumerate(rows):
        found = r.neighbours["all_other"]
        for other, sim in zip(found.ids, found.sims, strict=True):
            if other in index:  # answers a rule scores are not candidates
                out[i, index[other]] = sim
        for other in found.identical:
            if other in index:
                out[i, index[other]] = 1.0
    return out


def with_graded(rows: Sequence[ScorerRow], graded: set[str]) -> list[ScorerRow]:
    """The rows with a setting whose graded answers are ``graded`` (those are not scored)."""
    out = []
    for r in rows:
        found = r.neighbours["all_other"]
        keep = [(i, s) for i, s in zip(found.ids, found.sims, strict=True) if i in graded]
        mine = {} if r.id in graded else {CHOSEN: Neighbours(
            ids=[i for i, _ in keep], sims=[s for _, s in keep],
            identical=[i for i in found.identical if i in graded])}  # fmt: skip
        out.append(r.model_copy(update={"neighbours": {**r.neighbours, **mine}}))
    return out


@dataclass(frozen=True)
class Item:
    """One out-of-fold grade by the scorer and its fold (the Pearson figures)."""

    graded: Graded
    fold: int


class Folds:
    """Each row's scorer: on development fit on the other questions, on test the shipped."""

    def __init__(self, rows: list[ScorerRow], test: bool, shipped: ScorerSet):
        self.rows = rows
        self.groups: list[tuple[ScorerSet, list[int]]] = []
        if test:
            self.groups = [(shipped, list(range(len(rows))))]
            return
        for _, held in question_split([r.question for r in rows]):
            skip = set(held.tolist())
            fitted = fit_stages([r for i, r in enumerate(rows) if i not in skip], SHIPPED)
            scorer = fitted.model_copy(update={"confidence": shipped.confidence})
            self.groups.append((scorer, sorted(skip)))

    def grade(self, rows: list[ScorerRow], settings: Sequence[str], dataset: str | None = None):
        """``grade_rows`` per fold over ``rows`` (the same rows as built, changed settings),
        of one data set when given: each grade with its fold."""
        out = []
        for fold, (scorer, members) in enumerate(self.groups):
            mine = [rows[i] for i in members if dataset in (None, rows[i].dataset)]
            out += [Item(g, fold) for g in grade_rows(mine, scorer, settings)]
        return out

    def predict(self) -> dict[str, tuple[float, float]]:
        """What ``grader suggest`` sees: the share and confidence without the judge."""
        out = {}
        for scorer, members in self.groups:
            for i in members:
                row = self.rows[i]
                share = scorer.score(row.features)[1]
                sure = scorer_confidence(share, row.features, scorer)
                out[row.id] = (share, 0.5 if sure is None else sure)
        return out


def by_question(rows: Sequence[ScorerRow], dataset: str) -> dict[str, list[ScorerRow]]:
    found: dict[str, list[ScorerRow]] = defaultdict(list)
    for r in rows:
        if r.dataset == dataset:
            found[r.question].append(r)
    return found


Selector = Callable[[list[ScorerRow], int], list[str]]


def selected(questions: dict[str, list[ScorerRow]], k: int, pick: Selector) -> set[str]:
    """The graded ids: ``pick`` over each question's answers that no rule scores."""
    out: set[str] = set()
    for members in questions.values():
        candidates = [r for r in members if r.rule is None]
        out |= set(pick(candidates, k))
    return out


def chosen(rows: list[ScorerRow], k: int) -> list[str]:
    """``engine.suggest.choose`` (shipped): greedy experimental design over e5 cosines (read
    from the table, so made a kernel first)."""
    return [rows[i].id for i in choose(as_kernel(similarity(rows)), k)]


def stratified(predicted: dict) -> Selector:
    """The comparison: the answers sorted by the scorer's predicted share (without the judge,
    as ``grader suggest`` would see it) in K strata, each stratum's most typical answer."""

    def pick(rows: list[ScorerRow], k: int) -> list[str]:
        sim = similarity(rows)
        order = np.argsort([predicted[r.id][0] for r in rows], kind="stable")
        out = []
        for stratum in np.array_split(order, min(k, len(rows))):
            out.append(int(stratum[np.argmax(sim[np.ix_(stratum, stratum)].mean(axis=1))]))
        return [rows[i].id for i in out]

    return pick


def randomly(seed: int) -> Selector:
    def pick(rows: list[ScorerRow], k: int) -> list[str]:
        ids = sorted(r.id for r in rows)
        return random.Random(f"{seed}:{rows[0].question}").sample(ids, min(k, len(ids)))

    return pick


Line = dict  # {"base": float, "weights": {signal: float}}: engine.review_queue's model


def evaluate(folds: Folds, dataset: str, graded: set[str], lines: dict[int, Line]) -> dict:
    """Pearson and MAE on the answers not graded, and the queue's catch of large errors."""
    rows = with_graded(folds.rows, graded)
    items = folds.grade(rows, [CHOSEN], dataset)
    zeros = [r for r in folds.rows if r.dataset == dataset and r.rule and r.id not in graded]
    human = np.array([i.graded.row.share * i.graded.row.points for i in items] + [r.share * r.points for r in zeros])  # fmt: skip
    got = np.array([i.graded.share * i.graded.row.points for i in items] + [0.0] * len(zeros))
    return {
        "n": len(human),
        "pearson": round(float(pearsonr(human, got).statistic), 4),
        "mae": round(float(np.mean(np.abs(human - got))), 4),
        "queue": catch(
            production().replay(folds.groups, rows, CHOSEN, dataset), rankers(lines), RATES
        ),
    }


def rankers(lines: dict[int, Line]) -> dict[str, Ranker]:
    """The expected error (each fold's line) and the confidence alone (the ranking before
    the expected error)."""

    def ranked(a: Answer) -> float:
        assert a.scored is not None
        line = lines[a.fold]
        return error_share(a.scored.signals(a.share), line["base"], line["weights"])

    def doubt(a: Answer) -> float:
        assert a.scored is not None
        return a.scored.signals(a.share)["doubt"]

    return {"ranked": ranked, "confidence_only": doubt}


def fit_line(answers: Sequence[Answer]) -> Line:
    """|grade − human| (share) = base + Σ weight · signal, least squares."""
    x = np.array([[a.scored.signals(a.share)[n] for n in SIGNALS] for a in answers if a.scored])
    y = np.array([a.error for a in answers])
    coef, *_ = np.linalg.lstsq(np.column_stack([np.ones(len(y)), x]), y, rcond=None)
    weights = {n: round(float(w), 4) for n, w in zip(SIGNALS, coef[1:], strict=True)}
    return {"base": round(float(coef[0]), 4), "weights": weights}


def training(folds: Folds) -> list[Answer]:
    """The grades the line learns from: every graded-answer setting, replayed as production
    grades them, those the ranking orders (model-scored, no hard reason)."""
    found = [a for s in SETTINGS for a in production().replay(folds.groups, folds.rows, s)]
    return [a for a in found if a.scored is not None and not a.hard]


def fold_lines(folds: Folds, test: bool) -> tuple[dict[int, Line], dict]:
    """Each fold's line: on development fit on the other folds' grades (every graded-answer
    setting), so the dev queue figures are out of fold; on test the shipped file's."""
    if test:
        return {0: json.loads(ERROR_MODEL.read_text(encoding="utf-8"))}, {}
    learned = training(folds)
    lines = {f: fit_line([a for a in learned if a.fold != f]) for f in range(len(folds.groups))}
    errors = np.array([a.error for a in learned])
    fit = {"grades": len(learned), "mean_abs_error_share": round(float(errors.mean()), 4)}
    return lines, fit | fit_line(learned)


def compare(folds: Folds, dataset: str, ks: Sequence[int], lines: dict[int, Line]) -> dict:
    """Per K: five random draws, the shipped choice (k-medoids) and the strata, evaluated."""
    predicted = folds.predict()
    questions = by_question(folds.rows, dataset)
    out: dict = {}
    for k in ks:
        draws = [
            evaluate(folds, dataset, selected(questions, k, randomly(s)), lines) for s in range(5)
        ]
        found: dict = {
            "random": draws,
            "random_mean_pearson": round(float(np.mean([d["pearson"] for d in draws])), 4),
            "random_mean_mae": round(float(np.mean([d["mae"] for d in draws])), 4),
            "chosen": evaluate(folds, dataset, selected(questions, k, chosen), lines),
            "stratified": evaluate(
                folds, dataset, selected(questions, k, stratified(predicted)), lines
            ),
        }
        out[f"K={k}"] = found
        print(dataset, k, found["random_mean_pearson"], found["chosen"]["pearson"],
              found["stratified"]["pearson"], found["chosen"]["queue"]["20%"], flush=True)  # fmt: skip
    return out


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m benchmarks.review_queue", description=__doc__.split("\n\n")[0]
    )
    found.add_argument("--out", type=Path, help="write the JSON results here (else: printed)")
    found.add_argument("--test", action="store_true", help="the test parts, once")
    found.add_argument("--fit", action="store_true", help=f"write {ERROR_MODEL.name} (dev)")
    found.add_argument("--datasets", default="ads,mohler")
    found.add_argument(
        "--seeds", action="store_true", help="the seed answers through the whole grade instead"
    )
    found.add_argument("--held-out", action="store_true", help="with --seeds: set 2, read once")
    add_data_dir(found)
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    use_data_dir(args)
    if args.fit and args.test:
        raise SystemExit("--fit reads the development parts only")
    if args.held_out and not args.seeds:
        raise SystemExit("--held-out is for --seeds (the public data's test parts: --test)")
    if args.seeds:
        from benchmarks.lib.seed_queue import main_seeds

        return main_seeds(args.held_out, args.out)

    part = "test" if args.test else "dev"
    shipped = load_scorer("default")
    rows = [r for r in load_table() if r.part == part]
    folds = Folds(rows, args.test, shipped)
    lines, fit = fold_lines(folds, args.test)
    result: dict = {
        "benchmark": "review_queue",
        "code": code_version("grader", "benchmarks"),
        "split": f"{part} parts (benchmarks/lib/splits.py)",
        "large_error": f"|grade − human| ≥ {LARGE:.0%} of the points",
    }
    if fit:
        result["expected_error_fit"] = fit
    if args.fit:
        model = {"base": fit["base"], "weights": fit["weights"]}
        ERROR_MODEL.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    for dataset in args.datasets.split(","):
        result[dataset] = compare(folds, dataset, (5, 10), lines)
    write_result(result, args.out)


if __name__ == "__main__":
    main()
