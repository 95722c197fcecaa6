"""Do the review flags mean something? Development data only.

(a) Near-duplicates, ADS dev: every pair of answers to one question at e5 cosine ≥ 0.97. The
    pairs of different texts, both ≥ 20 content characters, fall into ten bins of 3-gram
    Jaccard; 15 pairs per bin (seeded rule below) were read and labelled copy / not a copy
    (``benchmarks/labels/ads_dev_near_duplicates.jsonl``); identical texts count as copies.
    Each rule's kept copies and flagged non-copies are estimated for all pairs by weighting
    each labelled pair with its bin's size / 15.
(b) Confidence, Mohler dev and ADS dev: out-of-fold grades of the proposed scorer (one model
    across both data sets; two stages where graded answers exist; ``scorer_dev.py``), a large
    error being |grade − human| ≥ 25 % of the points. For each uncertainty signal alone and
    for the logistic confidence over all of them (cross-validated by question), the share of
    the large errors among the 10, 20, 30 % least confident answers. Random review catches
    10, 20, 30 %.
(c) Graded copies: with every other dev answer graded, the answers whose exact text (match
    key) was graded, and how the copy rule (take those grades' mean) compares with the scorer.

    python benchmarks/scorer_review.py --out benchmarks/results/scorer_review.json
    python benchmarks/scorer_review.py --pairs   # print the cosine ≥ 0.97 pairs, then stop

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
from common import code_version
from scorer_data import RESIDUALS, dev_rows, load_table
from scorer_dev import SCOPES, cv_predict, cv_two_stage, signal_set
from sklearn.model_selection import GroupKFold
from splits import ads_items, ads_split

from grader.calibrate.scorer_fit import fit_confidence, fit_ridge
from grader.embed import Embedder
from grader.engine.review_rules import (
    UNCERTAINTY,
    caught,
    confidence,
    containment,
    jaccard,
    review_threshold,
    uncertainty_signals,
)
from grader.engine.scorer import AnswerFeatures
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


def graded_predictions(table: list[dict], setting: str):
    """Out-of-fold final shares of the proposed scorer, with the rows they belong to."""
    if setting == "none":
        rows = dev_rows(table, SCOPES["both"], "none")
        return rows, cv_predict(rows, signal_set("both"), "ridge")
    return cv_two_stage(table, "both", setting, RESIDUALS, "ridge")


def confidence_table(table: list[dict], setting: str) -> dict:
    """Large errors caught at each review rate, per uncertainty signal and combined."""
    rows, shares = graded_predictions(table, setting)
    everyone = dev_rows(table, SCOPES["both"], "none")
    # The standardisation of the signals scorer fit on all dev rows: no human score enters it.
    stage1 = signal_set("both")
    scaler = fit_ridge(everyone.matrix(stage1), everyone.share, stage1)
    errors = np.abs(shares - rows.share) >= 0.25
    features = [_features(rows, n) for n in range(len(shares))]
    signals = [uncertainty_signals(s, f, scaler) for s, f in zip(shares, features, strict=True)]
    names = [n for n in UNCERTAINTY if any(s[n] is not None for s in signals)]
    x = np.array([[np.nan if s[n] is None else s[n] for n in names] for s in signals])
    x = np.where(np.isnan(x), np.nanmean(x, axis=0), x)  # no neighbour: the average doubt
    learned = np.empty(len(shares))
    for train, test in GroupKFold(n_splits=5).split(x, errors, rows.groups):
        learned[test] = confidence(fit_confidence(x[train], ~errors[train], names), x[test])
    out = {}
    for dataset in ("mohler", "ads"):
        mask = rows.dataset == dataset
        found = {"n": int(mask.sum()), "large_errors": int(errors[mask].sum()), "caught": {}}
        for k, name in enumerate(names):
            found["caught"][name] = _rates(errors[mask], x[mask, k])
        found["caught"]["confidence (logistic, CV)"] = _rates(errors[mask], -learned[mask])
        out[dataset] = found
    out["review_below_confidence"] = {
        f"{r:.0%}": round(review_threshold(learned, r), 3) for r in RATES
    }
    out["confidence_model"] = fit_confidence(x, ~errors, names).model_dump()
    return out


def copy_agreement(table: list[dict]) -> dict:
    """Answers whose exact text was graded (every other dev answer graded): how often the
    graded copies' mean equals the human score, and MAE in points, copy rule vs scorer."""
    rows, shares = graded_predictions(table, "all_other")
    by_id = {r["id"]: r["share"] for r in table}
    out = {}
    for dataset in ("mohler", "ads"):
        found = [
            (n, np.mean([by_id[i] for i in r["neighbours"]["all_other"]["identical"]]))
            for n, r in enumerate(rows.rows)
            if r["dataset"] == dataset and r["neighbours"]["all_other"]["identical"]
        ]
        idx = np.array([n for n, _ in found])
        copy = np.array([c for _, c in found])
        human, points = rows.share[idx], rows.max_score[idx]
        out[dataset] = {
            "answers": len(found),
            "copy_equals_human": round(float(np.mean(np.isclose(copy, human))), 3),
            "copy_rule_mae": round(float(np.mean(np.abs(copy - human) * points)), 3),
            "scorer_mae": round(float(np.mean(np.abs(shares[idx] - human) * points)), 3),
        }
    return out


def _features(rows, n: int) -> AnswerFeatures:
    known = AnswerFeatures.model_fields
    values = {k: float(v[n]) for k, v in rows.columns.items() if k in known and not np.isnan(v[n])}
    return AnswerFeatures(**values)


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
        "graded_copies_all_other": copy_agreement(table),
        "confidence": {
            s: confidence_table(table, s) for s in ("none", "graded5", "graded10", "all_other")
        },
    }
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
