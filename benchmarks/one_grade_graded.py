"""One answer, one grade, third round (``one_grade.py --graded``): a graded-neighbour rescue.

The issue lets a score read the question's graded answers (instructor-scored: "the same
answer, with the same graded answers, gets the same score"), never the other ungraded ones. So
the rescue the first two rounds sought in the rubric's wording is sought here in the graded
answers: an answer below the zero margin is graded by the scorer (still flagged off topic, for
review) when its nearest graded answer of the question with a positive human score sits at an
e5 cosine of at least S. With no graded answer (setting "none") it cannot act.

The decision rule, written down before any figure of this round was computed:

- S in 0.85, 0.875, 0.9, 0.925.
- S is admissible when no blatant text is rescued: each blatant text-question pair of the
  first round below the zero margin (its recorded topic margin, ``--out``'s ``blatant``: the
  English texts against every Mohler development question, the Chinese ones against every ADS
  one) has its cosine (the production embedder, as ``blatant_wording`` encodes an answer) to
  each graded answer with a positive human score of that question, the graded sample
  (``splits.graded_sample``) of 5 and of 10; every such cosine must stay under S.
- Of the admissible S, the one with the highest mean Mohler development Pearson over graded5
  and graded10 ships if it beats no rescue by at least 0.01 in both settings and ADS
  development does not drop by more than 0.005 in either setting; otherwise no rescue ships.
  (Without graded answers the rescue cannot act: the rows have no neighbours in "none".)

Procedure: production's cross-validation (``question_folds``, GroupKFold(5) by question) of
the shipped design (the z-score dropped, ``WITHOUT_Z``), one fit per fold on the rows without
any rescue (the shipped scorer's own training rows: the rescue changes which answers it grades,
not what it was fit on), every held-out answer graded per setting with and without the rescue
(``grade_rows``), the rule's zeros counted as 0 (``rule_and_scorer``'s figures).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.offtopic_veto import ZERO_MARGIN, by_topic_alone
from benchmarks.scorer_cohort import WITHOUT_Z, without_z
from benchmarks.scorer_data import load_table
from benchmarks.scorer_judge import judge_readings
from grader.calibrate.scorer_cv import Graded, grade_rows, question_folds
from grader.calibrate.scorer_fit import fit_stages
from grader.calibrate.scorer_rows import ScorerRow

GRID = (0.85, 0.875, 0.9, 0.925)
GRADED = ("graded5", "graded10")


def nearest_positive(row: ScorerRow, setting: str, shares: dict[str, float]) -> float:
    """The cosine of the row's nearest graded answer with a positive human score in
    ``setting`` (a graded copy of its text: 1); -1 when it has none."""
    found = row.neighbours.get(setting)
    if found is None:
        return -1.0
    if any(shares[i] > 0 for i in found.identical):
        return 1.0
    return max((s for i, s in zip(found.ids, found.sims, strict=True) if shares[i] > 0),
               default=-1.0)  # fmt: skip


def blatant_nearest(recorded: dict[str, list[dict]]) -> dict[str, list[float]]:
    """Per graded setting, each recorded blatant pair below the zero margin: its cosine to the
    nearest positively scored graded answer of its question (-1: none)."""
    from benchmarks.datasets import load
    from benchmarks.offtopic_veto import ENGLISH_OFF_TOPIC
    from benchmarks.scorer_features import settings_for_table
    from benchmarks.scorer_lexical import INTEGRATION_OFF_TOPIC
    from benchmarks.signal_calibration import OFF_TOPIC
    from benchmarks.splits import graded_sample
    from grader.embed import Embedder
    from grader.text import language_of

    settings = settings_for_table()
    embedder = Embedder(settings.embeddings.model, batch_size=settings.embeddings.batch_size)
    chinese = tuple(t for t in (*OFF_TOPIC, *INTEGRATION_OFF_TOPIC) if language_of(t) == "zh")
    out: dict[str, list[float]] = {s: [] for s in GRADED}
    for dataset, texts in (("mohler", ENGLISH_OFF_TOPIC), ("ads", chinese)):
        items, parts, _ = load(dataset)
        dev = [i for i in items if parts[i.id] == "dev"]
        blatant = embedder.encode(list(texts))
        for setting in GRADED:
            chosen = [g for g in graded_sample(dev, int(setting[6:]))[0] if g.score > 0]
            vectors = embedder.encode([g.answer for g in chosen])
            sims = blatant @ vectors.T
            for pair in (p for p in recorded[dataset] if p["topic_margin"] < ZERO_MARGIN):
                mine = [j for j, g in enumerate(chosen) if g.question_id == pair["question"]]
                out[setting].append(round(float(sims[pair["text"], mine].max()), 4) if mine
                                    else -1.0)  # fmt: skip
    return out


def pearsons(graded: list[Graded], rows: list[ScorerRow], setting: str) -> dict:
    """Pearson, MAE and n per data set over the scorer's grades and the rule's zeros."""
    from scipy.stats import pearsonr

    pairs = [(g.row, g.share) for g in graded]
    pairs += [(r, 0.0) for r in rows if r.rule == "off_topic"
              and (setting == "none" or setting in r.neighbours)]  # fmt: skip
    out = {}
    for dataset in ("mohler", "ads"):
        mine = [(r, s) for r, s in pairs if r.dataset == dataset]
        human = np.array([r.share * r.points for r, _ in mine])
        got = np.array([s * r.points for r, s in mine])
        out[f"{setting} {dataset}"] = {
            "pearson": round(float(pearsonr(human, got).statistic), 4),
            "mae": round(float(np.mean(np.abs(human - got))), 4),
            "n": len(mine),
        }
    return out


def third_round(path: Path, rescued: Callable) -> None:
    """The graded-neighbour rescue over ``GRID``, beside the earlier rounds in ``path``;
    ``rescued``: ``one_grade.rescued``, the rows with the kept answers graded (the caller's,
    so that this module does not import it back)."""
    result = json.loads(path.read_text(encoding="utf-8"))
    blatant = blatant_nearest(result["blatant"]["texts"])
    highest = max(max(v) for v in blatant.values())
    readings = judge_readings("vllm", past_off_topic=True)
    rows = [without_z(r) for r in by_topic_alone([r for r in load_table() if r.part == "dev"])]
    shares = {r.id: r.share for r in rows}
    designs: dict[str, tuple[str, ...]] = {"no rescue": ("none", *GRADED)}
    designs |= {f"rescue >= {s}": GRADED for s in GRID if highest < s}  # inadmissible: unmeasured
    graded: dict[tuple[str, str], list[Graded]] = {}
    kept: dict[tuple[str, str], list[ScorerRow]] = {}
    for train, held in question_folds(rows):
        scorer = fit_stages(train, WITHOUT_Z)
        for name, settings in designs.items():
            for setting in settings:
                s = None if name == "no rescue" else float(name.split()[-1])
                mine = held if s is None else rescued(
                    held, readings, lambda r, s=s, t=setting: nearest_positive(r, t, shares) >= s)  # fmt: skip
                graded.setdefault((name, setting), []).extend(grade_rows(mine, scorer, (setting,)))
                kept.setdefault((name, setting), []).extend(mine)
    found = {name: {"rescued": {t: sum(r.rule is None and b.rule == "off_topic" for r, b in
                                       zip(kept[(name, t)], kept[("no rescue", t)], strict=True))
                                for t in settings},
                    "cv": {k: v for t in settings for k, v in
                           pearsons(graded[(name, t)], kept[(name, t)], t).items()}}
             for name, settings in designs.items()}  # fmt: skip
    for name, figures in found.items():
        print(name, json.dumps(figures), flush=True)
    result["third_round"] = {
        "designs": found,
        "blatant_nearest_positive": {t: sorted(v) for t, v in blatant.items()},
        "highest": highest,
        "decision": decide(found),
    }
    print("highest blatant cosine:", highest, "decision:", result["third_round"]["decision"])
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")


def decide(found: dict) -> str:
    """The rule in the docstring (inadmissible S are not in ``found``)."""
    base = found["no rescue"]["cv"]
    admissible = {n: d["cv"] for n, d in found.items() if n != "no rescue"}
    if not admissible:
        return "no admissible S: no rescue"

    def mean(cv: dict) -> float:
        return float(np.mean([cv[f"{t} mohler"]["pearson"] for t in GRADED]))

    name, best = max(admissible.items(), key=lambda kv: mean(kv[1]))
    gains = {t: best[f"{t} mohler"]["pearson"] - base[f"{t} mohler"]["pearson"] for t in GRADED}
    ads = {t: best[f"{t} ads"]["pearson"] - base[f"{t} ads"]["pearson"] for t in GRADED}
    ships = all(g >= 0.01 for g in gains.values()) and all(d >= -0.005 for d in ads.values())
    said = ", ".join(f"{t} {gains[t]:+.3f} Mohler / {ads[t]:+.3f} ADS" for t in GRADED)
    return f"best admissible {name}: {said}; ships: {ships}"
