"""Designs of the review queue's expected error, compared on development data only.

Each design is a small model over signals a stored grade can carry (its record: the final
share, the scorer's confidence, its features, who decided, its nearest graded answers' shares
and cosines), fit with a target: ``abs`` (|grade − human| as a share of the points, least
squares, the shipped kind) or ``large`` (a logistic model of "a large error", ≥ 25 % of the
points). The procedure is ``benchmarks.review_queue``'s: per fold of questions the shipped
scorer design fit on the other questions, every answer replayed as production grades it
(``review_replay``), the model of fold f fit on the other folds' grades of every graded-answer
setting, then each question's queue with K answers graded (``engine.review.suggest.choose``, as
``grader suggest``) ranked by it: the share of the large errors the queue holds at 10, 20 and
30 % of each question's answers (plus the hard ones), per data set, ADS and Mohler
development.

    python -m benchmarks.review_designs --out benchmarks/results/review_designs.json
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from benchmarks.common import code_version, write_result
from benchmarks.review_queue import CHOSEN, RATES, Folds, by_question, chosen, selected, with_graded
from benchmarks.review_replay import LARGE, Answer, catch, production
from benchmarks.scorer_data import load_table
from grader.calibrate.scorer_fit import SETTINGS
from grader.engine.scoring.scorer_model import load_scorer


def _scored(a: Answer):
    assert a.scored is not None
    return a.scored


def _feature(name: str, default: float = 0.0) -> Callable[[Answer], float]:
    def read(a: Answer) -> float:
        value = _scored(a).features.get(name)
        return default if value is None else float(value)

    return read


def _nearest_spread(a: Answer) -> float:
    shares = _scored(a).nearest
    return float(np.std(shares)) if len(shares) > 1 else 0.0


def _judge_gap(a: Answer) -> float:
    judge = _scored(a).features.get("judge_share")
    return abs(a.share - float(judge)) if judge is not None else 0.0


def _distance(a: Answer) -> float:
    sims = _scored(a).sims
    return 1.0 - sims[0] if sims else 0.0


def _graded_gap(a: Answer) -> float:
    """Mean distance from the share to every graded answer's share: high where the
    question's marks sit far from this grade (between modes, or beyond them)."""
    graded = _scored(a).graded
    return float(np.mean(np.abs(a.share - np.array(graded)))) if graded else 0.0


def _graded_spread(a: Answer) -> float:
    graded = _scored(a).graded
    return float(np.std(graded)) if len(graded) > 1 else 0.0


def _between_modes(a: Answer) -> float:
    """The mean distance to the graded shares beyond the distance to their mean: zero when
    the marks are one cluster, large for a grade between two clusters of marks."""
    graded = np.array(_scored(a).graded)
    if not len(graded):
        return 0.0
    return float(np.mean(np.abs(a.share - graded)) - abs(a.share - graded.mean()))


# every candidate signal, from what a grade's record holds (the last three: from every graded
# answer of the question, which the store holds, not the record)
CANDIDATES: dict[str, Callable[[Answer], float]] = {
    "doubt": lambda a: _scored(a).signals(a.share)["doubt"],
    "neighbour_gap": lambda a: _scored(a).signals(a.share)["neighbour_gap"],
    "coverage_gap": lambda a: _scored(a).signals(a.share)["coverage_gap"],
    "share_var": lambda a: a.share * (1.0 - a.share),
    "knn_spread": _feature("knn_spread"),
    "nearest_spread": _nearest_spread,
    "mean_gap": lambda a: _scored(a).signals(a.share)["mean_gap"],
    "distance": _distance,
    "topic_margin": _feature("topic_margin"),
    "length_log_ratio": _feature("length_log_ratio"),
    "abs_length": lambda a: abs(_feature("length_log_ratio")(a)),
    "copy": lambda a: _scored(a).signals(a.share)["copy"],
    "judge_gap": _judge_gap,
    "share": lambda a: a.share,
    "graded_gap": _graded_gap,
    "graded_spread": _graded_spread,
    "between_modes": _between_modes,
}

BASE = ("doubt", "neighbour_gap", "coverage_gap")
SHIPPED = (*BASE, "mean_gap", "copy")
DESIGNS: dict[str, tuple[tuple[str, ...], str]] = {
    "confidence alone": (("doubt",), "abs"),
    "the line before this pass: doubt, neighbour gap, coverage gap": (BASE, "abs"),
    "the same signals, logistic": (BASE, "large"),
    "+ share·(1−share)": ((*BASE, "share_var"), "abs"),
    "+ share·(1−share), logistic": ((*BASE, "share_var"), "large"),
    "+ knn spread": ((*BASE, "knn_spread"), "abs"),
    "+ nearest three's spread": ((*BASE, "nearest_spread"), "abs"),
    "+ gap to the nearest three's mean": ((*BASE, "mean_gap"), "abs"),
    "+ distance to the nearest graded": ((*BASE, "distance"), "abs"),
    "+ topic margin": ((*BASE, "topic_margin"), "abs"),
    "+ length log ratio": ((*BASE, "length_log_ratio"), "abs"),
    "+ |length log ratio|": ((*BASE, "abs_length"), "abs"),
    "+ copy decided": ((*BASE, "copy"), "abs"),
    "+ judge gap": ((*BASE, "judge_gap"), "abs"),
    "+ share": ((*BASE, "share"), "abs"),
    # second round: the first round's gainers together (written after reading the first)
    "+ mean gap, copy (shipped)": (SHIPPED, "abs"),
    "+ mean gap, copy, logistic": (SHIPPED, "large"),
    "+ mean gap, share·(1−share)": ((*BASE, "mean_gap", "share_var"), "abs"),
    "+ mean gap, share·(1−share), copy": ((*BASE, "mean_gap", "share_var", "copy"), "abs"),
    "+ mean gap, share·(1−share), copy, logistic": (
        (*BASE, "mean_gap", "share_var", "copy"),
        "large",
    ),
    "+ mean gap, judge gap": ((*BASE, "mean_gap", "judge_gap"), "abs"),
    "+ mean gap, judge gap, copy": ((*BASE, "mean_gap", "judge_gap", "copy"), "abs"),
    "+ mean gap, judge gap, copy, logistic": ((*BASE, "mean_gap", "judge_gap", "copy"), "large"),
    "doubt, mean gap, coverage gap": (("doubt", "mean_gap", "coverage_gap"), "abs"),
    "doubt, mean gap, coverage gap, copy": (("doubt", "mean_gap", "coverage_gap", "copy"), "abs"),
    # third round (session 14): the question's marks as a whole, beside the shipped line
    "shipped + graded gap": ((*SHIPPED, "graded_gap"), "abs"),
    "shipped + graded spread": ((*SHIPPED, "graded_spread"), "abs"),
    "shipped + between modes": ((*SHIPPED, "between_modes"), "abs"),
    "shipped + graded gap, spread": ((*SHIPPED, "graded_gap", "graded_spread"), "abs"),
    "shipped + graded gap, logistic": ((*SHIPPED, "graded_gap"), "large"),
    "doubt, graded gap, copy": (("doubt", "graded_gap", "copy"), "abs"),
    "all candidates": (tuple(CANDIDATES), "abs"),
    "all candidates, logistic": (tuple(CANDIDATES), "large"),
}


def matrix(answers: Sequence[Answer], signals: Sequence[str]) -> np.ndarray:
    return np.array([[CANDIDATES[n](a) for n in signals] for a in answers])


def fit(answers: Sequence[Answer], signals: Sequence[str], target: str) -> np.ndarray:
    """(intercept, weights…): least squares on |error|, or a logistic model of a large error
    (scikit-learn, unpenalised in effect: C = 1e4, on standardised-free raw signals)."""
    x = matrix(answers, signals)
    errors = np.array([a.error for a in answers])
    if target == "abs":
        coef, *_ = np.linalg.lstsq(np.column_stack([np.ones(len(x)), x]), errors, rcond=None)
        return coef
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1e4, max_iter=5000).fit(x, errors >= LARGE)
    return np.concatenate([model.intercept_, model.coef_[0]])


def score(coef: np.ndarray, signals: Sequence[str], a: Answer) -> float:
    """The design's rank of one answer (a logistic model's log-odds ranks as its chance)."""
    return float(
        coef[0] + sum(w * CANDIDATES[n](a) for w, n in zip(coef[1:], signals, strict=True))
    )


def anatomy(answers: Sequence[Answer]) -> dict:
    """Where a queue's large errors are: their human shares (to a quarter), and the grades
    of all answers and of the large errors in fifths of the points."""
    large = [a for a in answers if a.error >= LARGE]
    bins = np.linspace(0.0, 1.0, 6)
    return {
        "answers": len(answers),
        "full_marks": sum(a.row.share >= 1.0 for a in answers),
        "large_errors": len(large),
        "large_by_human_share": dict(sorted(Counter(str(round(a.row.share * 4) / 4) for a in large).items())),
        "large_graded_above_human": sum(a.share > a.row.share for a in large),
        "grades_by_fifth": np.histogram([a.share for a in answers], bins)[0].tolist(),
        "large_grades_by_fifth": np.histogram([a.share for a in large], bins)[0].tolist(),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results")
    parser.add_argument("--ks", default="10,5")
    args = parser.parse_args()
    rows = [r for r in load_table() if r.part == "dev"]
    folds = Folds(rows, False, load_scorer("default"))
    replay = production().replay
    learned = [a for s in SETTINGS for a in replay(folds.groups, rows, s)]
    learned = [a for a in learned if a.scored is not None and not a.hard]
    queues = {}
    for dataset in ("ads", "mohler"):
        questions = by_question(rows, dataset)
        for k in map(int, args.ks.split(",")):
            graded = selected(questions, k, chosen)
            queues[f"{dataset} K={k}"] = replay(
                folds.groups, with_graded(rows, graded), CHOSEN, dataset
            )
    result: dict = {
        "benchmark": "review_designs",
        "code": code_version("grader", "benchmarks/*.py"),
        "split": "dev parts (benchmarks/splits.py), out of fold",
        "training_grades": len(learned),
        "anatomy": {key: anatomy(answers) for key, answers in queues.items()},
        "designs": {},
    }
    for name, (signals, target) in DESIGNS.items():
        coefs = {f: fit([a for a in learned if a.fold != f], signals, target)
                 for f in range(len(folds.groups))}  # fmt: skip
        whole = fit(learned, signals, target)
        ranker = {"design": lambda a, s=signals, c=coefs: score(c[a.fold], s, a)}
        found: dict = {"signals": list(signals), "target": target,
                       "whole_fit": dict(zip(("base", *signals), np.round(whole, 4).tolist(), strict=True))}  # fmt: skip
        for key, answers in queues.items():
            cell = catch(answers, ranker, RATES)
            found[key] = {r: cell[r] for r in ("10%", "20%", "30%")}
            found.setdefault("ceilings", {})[key] = {k: cell[k] for k in ("answers", "large_errors", "large_per_answer", "hard", "hard_large_errors")}  # fmt: skip
        cells = [found[key][r]["design"] for key in queues for r in ("10%", "20%", "30%")]
        found["mean_recall"] = round(float(np.mean(cells)), 4)
        result["designs"][name] = found
        print(f"{name:46}", " ".join(f"{key} {found[key]['20%']['design']:.3f}" for key in queues),
              f"mean {found['mean_recall']:.3f}", flush=True)  # fmt: skip
    write_result(result, args.out)


if __name__ == "__main__":
    main()
