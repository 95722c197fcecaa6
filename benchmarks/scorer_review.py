"""Do the review flags mean something? Development data only.

(a) Near-duplicates, ADS dev: every pair of answers to one question at e5 cosine ≥ 0.97. The
    pairs of different texts, both ≥ 20 content characters, fall into ten bins of 3-gram
    Jaccard; 15 pairs per bin (seeded rule below) were read and labelled copy / not a copy
    (``benchmarks/labels/ads_dev_near_duplicates.jsonl``); identical texts count as copies.
    Each rule's kept copies and flagged non-copies are estimated for all pairs by weighting
    each labelled pair with its bin's size / 15.
(b) Confidence, Mohler dev and ADS dev: out-of-fold grades of the shipped design, by the
    production procedure (``grader.calibrate.scorer_cv.cv_grades``: per fold both stages fit
    on the other questions; copy rule, bands, grades in half points), a large error being
    |grade − human| ≥ 25 % of the points. The shipped confidence (``scorer_confidence`` with
    ``load_scorer("default")``, whose models were fit on these grades), the same models fit
    without the answer's own question (CV), and each uncertainty signal alone: the share of
    the large errors among the 10, 20, 30 % least confident grades (random review: 10, 20,
    30 %). The threshold: the confidence below which 20 % of the grades without graded
    answers fall, and what it reviews and catches in every setting.
(c) Graded copies: with every other dev answer graded, the answers whose exact text (match
    key) was graded: the copy rule's grade against the human one and the signals scorer's.

    python -m benchmarks.scorer_review --out benchmarks/results/scorer_review.json
    python -m benchmarks.scorer_review --pairs   # print the cosine ≥ 0.97 pairs, then stop

Sample rule for the labels: within a bin, pairs sorted by
sha256("grader-dup-sample:" + a + ":" + b), the first 15.
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks.common import code_version
from benchmarks.scorer_data import load_table
from benchmarks.splits import ads_items, ads_split
from grader.calibrate.scorer_cv import Graded, cv_grades, question_split
from grader.calibrate.scorer_fit import (
    SETTINGS,
    SHIPPED,
    ScorerDesign,
    fit_confidences,
    fit_stages,
    large_error,
    uncertainty_row,
)
from grader.calibrate.scorer_rows import ScorerRow
from grader.embed import Embedder
from grader.engine.scoring.confidence import UNCERTAINTY, caught, review_threshold
from grader.engine.scoring.scorer_core.rules import COPY
from grader.engine.scoring.scorer_grade import scorer_confidence
from grader.engine.scoring.scorer_model import load_scorer
from grader.engine.signals.copies import containment, jaccard
from grader.text import content_chars, match_key

LABELS = Path(__file__).resolve().parent / "labels" / "ads_dev_near_duplicates.jsonl"
RATES = (0.1, 0.2, 0.3)


def near_pairs(min_cosine: float = 0.97) -> list[dict]:
    """Pairs of ADS development answers to one question at or above ``min_cosine``."""
    items = ads_split(ads_items())["dev"]
    embedder = Embedder("multilingual-e5-small")
    by_question = defaultdict(list)
    for item in items:
        by_question[item.question_id].append(item)
    pairs = []
    for _, members in sorted(by_question.items()):
        sims = (lambda v: v @ v.T)(embedder.encode([m.answer for m in members]))
        for i in range(len(members)):
            for j in range(i + 1, len(members)):
                if sims[i, j] >= min_cosine:
                    pairs.append(_pair(members[i], members[j], float(sims[i, j])))
    return pairs


def _pair(a, b, cosine: float) -> dict:
    keys = match_key(a.answer), match_key(b.answer)
    return {
        "question_id": a.question_id, "a": a.id, "b": b.id, "cosine": round(cosine, 4),
        "identical": keys[0] == keys[1],
        "eligible": min(content_chars(a.answer), content_chars(b.answer)) >= 20,
        "jaccard": jaccard(a.answer, b.answer),
        "containment": containment(a.answer, b.answer),
        "containment_q": containment(a.answer, b.answer, a.question),
        "edit": difflib.SequenceMatcher(None, *keys, autojunk=False).ratio(),
        "scores": [a.score, b.score], "texts": [a.answer, b.answer],
    }  # fmt: skip


def duplicate_rules(pairs: list[dict], labels: list[dict]) -> dict:
    """Estimated copies kept and non-copies flagged, over all eligible pairs, per rule."""
    by_key = {(p["a"], p["b"]): p for p in pairs}
    sample = [(by_key[(x["a"], x["b"])], x["copy"], x["bin_pairs"] / 15) for x in labels]
    identical = [p for p in pairs if p["identical"] and p["eligible"]]
    copies = len(identical) + sum(w for _, c, w in sample if c)

    def rule(name: str, keep) -> dict:
        kept = len(identical) + sum(w for p, c, w in sample if c and keep(p))
        wrong = sum(w for p, c, w in sample if not c and keep(p))
        return {"rule": name, "flagged": round(kept + wrong), "copies_kept": round(kept),
                "copies_missed": round(copies - kept), "non_copies_flagged": round(wrong),
                "sample_copies_kept": sum(1 for p, c, _ in sample if c and keep(p)),
                "sample_non_copies_flagged": sum(1 for p, c, _ in sample if not c and keep(p))}  # fmt: skip

    rules = [rule("cosine ≥ 0.97, both ≥ 20 content chars (today)", lambda p: True)]
    for measure, label in (("jaccard", "3-gram Jaccard"), ("containment", "3-gram containment"),
                           ("containment_q", "3-gram containment without the question's"),
                           ("edit", "edit similarity")):  # fmt: skip
        for t in (0.4, 0.5, 0.6, 0.7):
            rules.append(rule(f"… and {label} ≥ {t}", lambda p, m=measure, t=t: p[m] >= t))
    same = [p for p in pairs if p["identical"]]
    return {
        "pairs_at_cosine_0.97": len(pairs),
        "identical_texts": len(same),
        "eligible_pairs": sum(p["eligible"] for p in pairs),
        "labelled": len(sample),
        "sample_copies": sum(c for _, c, _ in sample),
        "estimated_copies": round(copies),
        "identical_with_different_scores": sum(p["scores"][0] != p["scores"][1] for p in same),
        "rules": rules,
    }


def confidence_figures(table: list[ScorerRow]) -> dict:
    """The shipped confidence on out-of-fold development grades (production's procedure,
    ``cv_grades``): large errors caught at each review rate, per setting and data set; the
    same for a confidence fit without the answer's own question (CV) and for each signal
    alone; and the threshold that sends about 20 % of grades without graded answers to review."""
    rows = [r for r in table if r.part == "dev"]
    shipped = load_scorer("default")
    design = SHIPPED
    graded = cv_grades(rows, lambda train: fit_stages(train, design), SETTINGS)
    sure = np.array([scorer_confidence(g.share, g.features, shipped) for g in graded])
    errors = np.array([large_error(g) for g in graded])
    crossed = _cv_confidence(graded, shipped, design)
    values = [uncertainty_row(g, shipped) for g in graded]
    singles = {k: np.array([np.nan if v[k] is None else v[k] for v in values]) for k in UNCERTAINTY}
    setting = np.array([g.setting for g in graded])
    dataset = np.array([g.row.dataset for g in graded])
    threshold = round(review_threshold(sure[setting == "none"], 0.2), 2)
    out: dict = {"review_below_confidence": threshold, "settings": {}}
    for name in SETTINGS:
        for data in ("mohler", "ads"):
            m = (setting == name) & (dataset == data)
            signals = {k: _rates(errors[m], v[m]) for k, v in singles.items()
                       if not np.isnan(v[m]).all()}  # fmt: skip
            out["settings"].setdefault(name, {})[data] = {
                "n": int(m.sum()),
                "large_errors": int(errors[m].sum()),
                "shipped": _rates(errors[m], -sure[m]),
                "cv": _rates(errors[m], -crossed[m]),
                "signals": signals,
                "below_threshold": {
                    "reviewed": round(float((sure[m] < threshold).mean()), 3),
                    "caught": round(
                        float(errors[m & (sure < threshold)].sum() / max(1, errors[m].sum())), 3
                    ),
                },
            }
    out["copies_all_other"] = _copies(graded)
    return out


def _cv_confidence(graded: list[Graded], shipped, design: ScorerDesign) -> np.ndarray:
    """Each grade's confidence from models fit on the other questions' grades only."""
    questions = np.array([g.row.question for g in graded])
    out = np.empty(len(graded))
    for _, test in question_split(questions):
        held = set(questions[test])
        models = fit_confidences([g for g in graded if g.row.question not in held], shipped,
                                 design.confidence)  # fmt: skip
        fold = shipped.model_copy(update={"confidence": models})
        for i in test:
            out[i] = scorer_confidence(graded[i].share, graded[i].features, fold)
    return out


def _copies(graded: list[Graded]) -> dict:
    """With every other dev answer graded: answers whose exact text was graded, the copy
    rule's grade against the human one, and the signals scorer's on the same answers."""
    alone = {g.row.id: g.share for g in graded if g.setting == "none"}
    out = {}
    for data in ("mohler", "ads"):
        found = [g for g in graded if g.setting == "all_other" and g.decided == COPY
                 and g.row.dataset == data]  # fmt: skip
        human = np.array([g.row.share for g in found])
        points = np.array([g.row.points for g in found])
        copy = np.array([g.share for g in found])
        signals = np.array([alone[g.row.id] for g in found])
        out[data] = {
            "answers": len(found),
            "copy_equals_human": round(float(np.mean(np.isclose(copy, human))), 3),
            "copy_rule_mae": round(float(np.mean(np.abs(copy - human) * points)), 3),
            "signals_scorer_mae": round(float(np.mean(np.abs(signals - human) * points)), 3),
        }
    return out


def _rates(errors: np.ndarray, uncertainty: np.ndarray) -> dict[str, float]:
    return {f"{r:.0%}": round(caught(errors, uncertainty, r), 3) for r in RATES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results")
    parser.add_argument("--pairs", action="store_true", help="print the pairs, then stop")
    args = parser.parse_args()

    pairs = near_pairs()
    if args.pairs:
        for p in pairs:
            print(json.dumps(p, ensure_ascii=False))
        return
    labels = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
    table = load_table()
    result = {
        "benchmark": "scorer_review",
        "code": code_version("grader", "benchmarks/*.py", "benchmarks/labels"),
        "split": "development parts only (benchmarks/splits.py)",
        "near_duplicates_ads_dev": duplicate_rules(pairs, labels),
        "confidence": confidence_figures(table),
    }
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
