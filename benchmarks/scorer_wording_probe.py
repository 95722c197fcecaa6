"""The probes behind ``scorer_wording.py`` (issue 13), development data only.

A quicker stand-in for the production procedure: per question, a leave-one-out ridge over the
other development answers (all of them, or the 10 graded ones) predicts an answer's residual
(human share − its out-of-fold stage-1 share); its prediction plus that stage-1 share is
"model", and a linear stack of it on a design's own out-of-fold grades (GroupKFold(5) by
question) is "stacked". Pearson over the development answers the design's scorer grades.

- ``grid``: against E5 (the design before the wording), the n-grams and alpha that
  ``grader.engine.scoring.wording`` took, and a ridge on the share itself instead of the residual.
- ``vectors``: against the shipped design (E6), the answers' e5 vectors as the ridge's input,
  alone or beside the n-grams (tried, not pursued).

    python -m benchmarks.scorer_wording_probe grid --out benchmarks/results/scorer_wording_probe_grid.json     # 4 min
    python -m benchmarks.scorer_wording_probe vectors --out benchmarks/results/scorer_wording_probe_vectors.json  # 3 min
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sparse
from scipy.stats import pearsonr
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LinearRegression, Ridge

from benchmarks.common import code_version
from benchmarks.scorer_data import load_table
from benchmarks.scorer_wording import BEFORE
from grader.calibrate.scorer_cv import cv_grades, question_split
from grader.calibrate.scorer_fit import SHIPPED, ScorerDesign, fit_stages
from grader.calibrate.scorer_rows import ScorerRow

SETTINGS = ("graded10", "all_other")
NGRAMS = {
    "ads": {"char 1-2": ("char", (1, 2)), "char 1-3": ("char", (1, 3)), "char 2-4": ("char", (2, 4))},
    "mohler": {"word 1": ("word", (1, 1)), "word 1-2": ("word", (1, 2)), "char_wb 2-5": ("char_wb", (2, 5))},
}  # fmt: skip
SHIPPED_NGRAMS = {"ads": "char 1-3", "mohler": "char_wb 2-5"}


def out_of_fold(rows: list[ScorerRow], design: ScorerDesign) -> dict[str, dict[str, float]]:
    graded = cv_grades(rows, lambda train: fit_stages(train, design), ("none", *SETTINGS))
    return {s: {g.row.id: g.share for g in graded if g.setting == s} for s in ("none", *SETTINGS)}


def pool(rows: list[ScorerRow], row: ScorerRow, setting: str) -> list[ScorerRow]:
    """The graded answers of the row's question in ``setting``, never the row itself."""
    return [g for g in rows if g.id != row.id and (setting == "all_other" or setting not in g.neighbours)]  # fmt: skip


def loo(rows, grades, setting, inputs, alpha: float, target: str) -> dict[str, float]:
    """Each scored row's leave-one-out prediction of its share (residual + stage-1 share)."""
    base = grades["none"]
    by_question: dict[str, list[ScorerRow]] = {}
    for r in rows:
        by_question.setdefault(r.question, []).append(r)
    out = {}
    for members in by_question.values():
        for r in members:
            if not r.scored_in(setting):
                continue
            others = pool(members, r, setting)
            offset = [0.0 if target == "share" else base.get(g.id, 0.0) for g in others]
            x, x_new = inputs(others, r)
            model = Ridge(alpha=alpha).fit(
                x, [g.share - o for g, o in zip(others, offset, strict=True)]
            )
            out[r.id] = float(model.predict(x_new)[0]) + (0.0 if target == "share" else base.get(r.id, 0.0))  # fmt: skip
    return out


def ngram_inputs(analyzer: str, span: tuple[int, int]):
    def inputs(others, row):
        vectoriser = TfidfVectorizer(sublinear_tf=True, analyzer=analyzer, ngram_range=span)
        x = vectoriser.fit_transform([" ".join(g.answer.split()) for g in others])
        return x, vectoriser.transform([" ".join(row.answer.split())])

    return inputs


def vector_inputs(vectors: dict[str, np.ndarray], ngrams=None):
    def inputs(others, row):
        x = np.array([vectors[g.id] for g in others])
        x_new = vectors[row.id][None]
        if ngrams is None:
            return x, x_new
        t, t_new = ngrams(others, row)
        return sparse.hstack([t, sparse.csr_matrix(x)]).tocsr(), sparse.hstack([t_new, sparse.csr_matrix(x_new)]).tocsr()  # fmt: skip

    return inputs


def figures(rows, grades, setting, predicted) -> dict[str, float]:
    by_id = {r.id: r for r in rows}
    ids = [i for i in grades[setting] if i in predicted]
    human = np.array([by_id[i].share for i in ids])
    design = np.array([grades[setting][i] for i in ids])
    model = np.array([predicted[i] for i in ids])
    groups = np.array([by_id[i].question for i in ids])
    both = np.c_[design, model]
    stacked = np.zeros(len(ids))
    for train, test in question_split(groups):
        stacked[test] = LinearRegression().fit(both[train], human[train]).predict(both[test])
    return {"n": len(ids), "design": round(pearsonr(design, human)[0], 4),
            "model": round(pearsonr(model, human)[0], 4),
            "stacked": round(pearsonr(stacked, human)[0], 4)}  # fmt: skip


def grid(rows) -> list[dict]:
    grades = out_of_fold(rows, BEFORE)
    found = []
    for dataset, choices in NGRAMS.items():
        mine = [r for r in rows if r.dataset == dataset]
        runs = [(name, alpha, "residual") for name in choices for alpha in (0.03, 0.1, 0.3, 1.0)]
        runs.append((SHIPPED_NGRAMS[dataset], 0.1, "share"))
        for name, alpha, target in runs:
            inputs = ngram_inputs(*choices[name])
            row = {"dataset": dataset, "ngrams": name, "alpha": alpha, "target": target}
            for setting in SETTINGS:
                predicted = loo(mine, grades, setting, inputs, alpha, target)
                row[setting] = figures(mine, grades, setting, predicted)
            print(json.dumps(row), flush=True)
            found.append(row)
    return found


def vectors_probe(rows) -> list[dict]:
    from grader.config import Settings
    from grader.embed import make_embedder

    grades = out_of_fold(rows, SHIPPED)
    vectors = dict(zip([r.id for r in rows], make_embedder(Settings()).encode([r.answer for r in rows]), strict=True))  # fmt: skip
    found = []
    for dataset in NGRAMS:
        mine = [r for r in rows if r.dataset == dataset]
        ngrams = ngram_inputs(*NGRAMS[dataset][SHIPPED_NGRAMS[dataset]])
        for kind, inputs in (("e5", vector_inputs(vectors)), ("e5 + n-grams", vector_inputs(vectors, ngrams))):  # fmt: skip
            for alpha in (0.1, 1.0):
                row = {"dataset": dataset, "inputs": kind, "alpha": alpha}
                for setting in SETTINGS:
                    predicted = loo(mine, grades, setting, inputs, alpha, "residual")
                    row[setting] = figures(mine, grades, setting, predicted)
                print(json.dumps(row), flush=True)
                found.append(row)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("probe", choices=("grid", "vectors"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    rows = [r for r in load_table() if r.part == "dev"]
    found = grid(rows) if args.probe == "grid" else vectors_probe(rows)
    result = {"benchmark": f"scorer_wording_probe {args.probe}", "code": code_version(),
              "split": "development parts only (benchmarks/splits.py)", "rows": found}  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
