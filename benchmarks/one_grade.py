"""One answer, one grade (issue 27, item 0): the designs that read no classmates. Dev only.

Two things read the answers that share a run: the scorer's ``cohort_reference_z`` (the
reference margin as a z-score among the question's answers) and the off-topic rule's rescue
(``AnswerSignals.peer_margin``: an answer below the zero margin is graded when it sits among
its classmates' answers). Graded in a file of its own, an answer has neither, so its score
depends on who shares the run. The issue makes one score per answer a requirement, so the
shipped design may read neither; this compares what can take their place, every design
cross-validated by the production procedure (``benchmarks.scorer_data.rule_and_scorer``:
``cv_grades``, GroupKFold(5) by question, copy rule and bands, over every answer a rule or the
scorer grades, the rule's zeros included) on the development parts (Mohler dev half, ADS dev).

The decision rule, written down before any figure of the wording rescue was computed (the
figures of dropping either feature were in docs/research/benchmarks-log.md already: "The cohort
z-score", "The off-topic rule, second round"):

1. The z-score: no batch-free replacement is at hand, so it is dropped and the scorer refit
   without it (the English judge scorer kept, on the signals without the z-score).
2. The classmates rescue is replaced by one that reads the answer and the rubric only: an
   answer below the zero margin is graded when its n-gram coverage of the rubric's key points
   (``grader.engine.signals.coverage``: the rubric's own words, no model) reaches C, C in 0.05, 0.1,
   0.15, 0.2, 0.25. A C is admissible when every blatant off-topic text below the zero margin
   stays under it, each graded alone against every development question of its language (the
   English texts of ``offtopic_veto`` against Mohler's, the Chinese ones against ADS's). Of the
   admissible ones, the C with the highest Mohler development Pearson without graded answers
   ships if it beats no rescue (every answer below the zero margin 0) by at least 0.01 there
   and is not lower with 5 or with 10 graded answers; otherwise no rescue ships.

**Second round**, written after the first round's figures and before any of its own: no C
was admissible (blatant English text reaches 0.5 of a derived rubric's wording, through
function words: "the", "is", "to"). The same rescue on the key points' content words only
(``content_coverage``: Latin words of at least 4 letters, Chinese bigrams as before), C in
0.1, 0.2; the same admissibility and shipping rule, against the first round's "no rescue".

    python -m benchmarks.one_grade --out benchmarks/results/one_grade.json
    python -m benchmarks.one_grade --out benchmarks/results/one_grade.json --content
    python -m benchmarks.one_grade --out benchmarks/results/one_grade.json --zero -0.02
    python -m benchmarks.one_grade --out benchmarks/results/one_grade.json --graded

``--graded``: the third round, a rescue by the question's graded answers (issue 27 lets a
score read those): its decision rule, written before its figures, is in ``one_grade_graded``.

``--zero``: after the decision, for the record only (no rule; nothing ships from it): the
shipped design with a lower zero margin, the batch-free setting docs/embeddings.md offers
exams with one-line references, and how many blatant pairs would then be graded.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

from threadpoolctl import threadpool_limits

from benchmarks.common import code_version
from benchmarks.offtopic_veto import ENGLISH_OFF_TOPIC, ZERO_MARGIN, by_topic_alone
from benchmarks.scorer_cohort import WITH_Z, WITHOUT_Z, without_z
from benchmarks.scorer_data import load_table, rule_and_scorer
from benchmarks.scorer_judge import judge_readings, judge_seen
from grader.calibrate.scorer_fit import ScorerDesign, fit_stages
from grader.calibrate.scorer_rows import ScorerRow

WORDING = (0.05, 0.1, 0.15, 0.2, 0.25)
CONTENT = (0.1, 0.2)
MIN_LATIN = 4  # letters: shorter English words are mostly function words
PEERS = 0.045  # the classmates rule as shipped before (``offtopic_peer_margin``)


def rescued(rows: list[ScorerRow], readings: dict[str, dict], keep) -> list[ScorerRow]:
    """The rows with each answer the off-topic rule zeroed graded where ``keep(row)`` holds,
    with the judge's reading of it where it is English (the judge's reading is weighed there)."""
    out = []
    for row in rows:
        if row.rule == "off_topic" and keep(row):
            english = row.features.language == "en"
            judge = judge_seen(readings.get(row.id)) if english else None
            row = row.model_copy(update={"rule": None, "judge": judge})
        out.append(row)
    return out


def blatant_wording() -> dict[str, list[dict]]:
    """Each blatant text graded alone against every development question of its language:
    its topic margin and its n-gram coverage of the question's derived rubric."""
    from benchmarks.datasets import as_bank, load
    from benchmarks.scorer_features import settings_for_table
    from benchmarks.scorer_lexical import INTEGRATION_OFF_TOPIC
    from benchmarks.signal_calibration import OFF_TOPIC
    from grader.embed import Embedder
    from grader.engine.reading.rubrics import rubric_for
    from grader.engine.signals.analysis import analyze_question
    from grader.engine.signals.coverage import coverage_points
    from grader.models import Submission
    from grader.text import language_of

    settings = settings_for_table()
    embedder = Embedder(settings.embeddings.model, batch_size=settings.embeddings.batch_size)
    chinese = tuple(t for t in (*OFF_TOPIC, *INTEGRATION_OFF_TOPIC) if language_of(t) == "zh")
    out: dict[str, list[dict]] = {}
    for dataset, texts in (("mohler", ENGLISH_OFF_TOPIC), ("ads", chinese)):
        items, parts, language = load(dataset)
        dev = {i.question_id for i in items if parts[i.id] == "dev"}
        out[dataset] = []
        for question in (q for q in as_bank(dataset, items, language).questions if q.id in dev):
            rubric = rubric_for(question, {})
            for n, text in enumerate(texts):
                me = Submission(id=f"blatant-{n}", question_id=question.id, answer=text)
                signals = analyze_question(question, rubric, [me], embedder, settings.signals)
                out[dataset].append({
                    "question": question.id, "text": n,
                    "topic_margin": signals.signals[me.id].topic_margin,
                    "ngram_coverage": round(coverage_points(rubric, text) / rubric.points, 4),
                })  # fmt: skip
    return out


def content_coverage(rubric, answer: str) -> float:
    """``coverage_points`` / points on content words only: the key points' Latin words of at
    least ``MIN_LATIN`` letters and their Chinese bigrams."""
    from grader.text import features

    def content(text: str) -> set[str]:
        return {f for f in features(text) if not f.isascii() or len(f) >= MIN_LATIN}

    have, covered = content(answer), 0.0
    for criterion in rubric.criteria:
        wanted = [content(p) for p in (criterion.key_points or [criterion.description])]
        shares = [len(w & have) / len(w) if w else 0.0 for w in wanted]
        covered += criterion.points * sum(shares) / len(shares)
    return covered / rubric.points


def dev_rubrics() -> dict[str, object]:
    """The derived rubric of every question, by the table's ``dataset:question`` id."""
    from benchmarks.datasets import as_bank, load
    from grader.engine.reading.rubrics import rubric_for

    out = {}
    for dataset in ("mohler", "ads"):
        items, _, language = load(dataset)
        for q in as_bank(dataset, items, language).questions:
            out[f"{dataset}:{q.id}"] = rubric_for(q, {})
    return out


def blatant_content() -> list[float]:
    """The content coverage of each blatant text below the zero margin (first round's pairs)."""
    from benchmarks.datasets import as_bank, load
    from benchmarks.scorer_lexical import INTEGRATION_OFF_TOPIC
    from benchmarks.signal_calibration import OFF_TOPIC
    from grader.engine.reading.rubrics import rubric_for
    from grader.text import language_of

    chinese = tuple(t for t in (*OFF_TOPIC, *INTEGRATION_OFF_TOPIC) if language_of(t) == "zh")
    found = blatant_wording()
    out = []
    for dataset, texts in (("mohler", ENGLISH_OFF_TOPIC), ("ads", chinese)):
        items, _, language = load(dataset)
        questions = {q.id: q for q in as_bank(dataset, items, language).questions}
        for b in found[dataset]:
            if b["topic_margin"] < ZERO_MARGIN:
                rubric = rubric_for(questions[b["question"]], {})
                out.append(round(content_coverage(rubric, texts[b["text"]]), 4))
    return out


def second_round(path: Path) -> None:
    """The content-word rescue, beside the first round's figures in ``path``."""
    result = json.loads(path.read_text(encoding="utf-8"))
    readings = judge_readings("vllm", past_off_topic=True)
    stripped = [without_z(r) for r in by_topic_alone([r for r in load_table() if r.part == "dev"])]
    rubrics = dev_rubrics()
    blatant = blatant_content()
    highest = max(blatant)
    found = {}
    for c in (c for c in CONTENT if highest < c):  # an inadmissible C is not measured
        rows = rescued(stripped, readings,
                       lambda r, c=c: content_coverage(rubrics[r.question], r.answer) >= c)  # fmt: skip
        found[f"z dropped, content rescue >= {c}"] = figures(rows, WITHOUT_Z)
        print(c, json.dumps(found[f"z dropped, content rescue >= {c}"]), flush=True)
    base = result["designs"]["z dropped, no rescue"]["cv"]
    admissible = {c: found[f"z dropped, content rescue >= {c}"]["cv"] for c in CONTENT
                  if highest < c}  # fmt: skip
    decision = "no admissible C: no rescue"
    if admissible:
        c, best = max(admissible.items(), key=lambda kv: kv[1]["none mohler"]["pearson"])
        gain = best["none mohler"]["pearson"] - base["none mohler"]["pearson"]
        kept = all(best[f"{s} mohler"]["pearson"] >= base[f"{s} mohler"]["pearson"]
                   for s in ("graded5", "graded10"))  # fmt: skip
        ships = gain >= 0.01 and kept
        decision = f"C = {c}: {gain:+.3f} Mohler none, graded5/10 kept: {kept}; ships: {ships}"
    result["second_round"] = {"designs": found, "blatant_content_below": sorted(blatant),
                              "highest": highest, "decision": decision}  # fmt: skip
    print("highest blatant content coverage:", highest, "decision:", decision)
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")


def lower_zero(path: Path, zero: float) -> None:
    """The shipped design (no z-score, no rescue) with every answer below ``zero`` 0."""
    result = json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for row in (without_z(r) for r in load_table() if r.part == "dev"):
        if row.rule in (None, "off_topic"):
            below = row.features.topic_margin < zero
            row = row.model_copy(update={"rule": "off_topic", "judge": None} if below
                                 else {"rule": None})  # fmt: skip
        rows.append(row)
    readings = judge_readings("vllm", past_off_topic=True)
    rows = [  # an English answer the table's rule zeroed, graded now: its reading past the rule
        r.model_copy(update={"judge": judge_seen(readings.get(r.id))})
        if r.rule is None and r.judge is None and r.features.language == "en"
        else r
        for r in rows
    ]
    found = figures(rows, WITHOUT_Z)
    pairs = [b for v in result["blatant"]["texts"].values() for b in v]
    graded = sum(b["topic_margin"] >= zero for b in pairs)
    result[f"zero_margin {zero}"] = {**found, "blatant_graded": f"{graded} of {len(pairs)}"}
    print(zero, json.dumps(result[f"zero_margin {zero}"]), flush=True)
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")


def figures(rows: list[ScorerRow], design: ScorerDesign) -> dict:
    """Dev CV per setting and data set: Pearson, MAE and n; the answers the rule zeroed."""
    zeros = [r for r in rows if r.rule == "off_topic"]
    found = rule_and_scorer(rows, lambda train: fit_stages(train, design))
    return {
        "zeroed": len(zeros),
        "cv": {f"{setting} {dataset}": {"pearson": r, "mae": mae, "n": n}
               for setting, by in found.items() for dataset, (r, mae, n) in by.items()},
    }  # fmt: skip


def decide(designs: dict, highest: float) -> str:
    """The rule in the docstring, applied to the rescue (the z-score is dropped by rule 1)."""
    base = designs["z dropped, no rescue"]["cv"]
    admissible = {c: designs[f"z dropped, wording rescue >= {c}"]["cv"] for c in WORDING
                  if highest < c}  # fmt: skip
    if not admissible:
        return "no admissible C: no rescue"
    c, best = max(admissible.items(), key=lambda kv: kv[1]["none mohler"]["pearson"])
    gain = best["none mohler"]["pearson"] - base["none mohler"]["pearson"]
    kept = all(
        best[f"{s} mohler"]["pearson"] >= base[f"{s} mohler"]["pearson"]
        for s in ("graded5", "graded10")
    )
    if gain >= 0.01 and kept:
        return f"wording rescue at C = {c} ships (+{gain:.3f} Mohler none over no rescue)"
    return f"no rescue: the best admissible C = {c} gains {gain:+.3f}, graded5/10 kept: {kept}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--content", action="store_true", help="the second round, into --out")
    parser.add_argument("--graded", action="store_true", help="the third round, into --out")
    parser.add_argument("--zero", type=float, help="the shipped design at this zero margin")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    threadpool_limits(1)
    if args.content:
        second_round(args.out)
        return
    if args.graded:
        from benchmarks.one_grade_graded import third_round

        third_round(args.out, rescued)
        return
    if args.zero is not None:
        lower_zero(args.out, args.zero)
        return
    started = time.perf_counter()
    readings = judge_readings("vllm", past_off_topic=True)
    # every answer below the zero margin 0, whichever rule the table was built with
    alone = by_topic_alone([r for r in load_table() if r.part == "dev"])
    stripped = [without_z(r) for r in alone]
    peers = rescued(alone, readings, lambda r: (r.features.peer_margin or -1) >= PEERS)
    designs = {
        "shipped: z-score, classmates rescue": (peers, WITH_Z),
        "z-score, no rescue": (alone, WITH_Z),
        "z dropped, classmates rescue": ([without_z(r) for r in peers], WITHOUT_Z),
        "z dropped, no rescue": (stripped, WITHOUT_Z),
        **{
            f"z dropped, wording rescue >= {c}": (
                rescued(stripped, readings, lambda r, c=c: r.features.ngram_coverage >= c),
                WITHOUT_Z,
            )
            for c in WORDING
        },
    }
    found = {}
    for name, (rows, design) in designs.items():
        found[name] = figures(rows, design)
        print(name, json.dumps(found[name]), flush=True)
    blatant = blatant_wording()
    below = [b for v in blatant.values() for b in v if b["topic_margin"] < ZERO_MARGIN]
    highest = max(b["ngram_coverage"] for b in below)
    result = {
        "benchmark": "one_grade",
        "code": code_version("grader", "benchmarks/*.py"),
        "split": "development parts only (benchmarks/splits.py)",
        "folds": "GroupKFold(5) by question",
        "designs": found,
        "blatant": {
            "pairs": sum(map(len, blatant.values())),
            "below_zero_margin": len(below),
            "highest_ngram_coverage_below": highest,
            "texts": blatant,
        },
        "decision": decide(found, highest),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print("blatant below the zero margin:", len(below), "highest n-gram coverage:", highest)
    print("decision:", result["decision"])
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")


if __name__ == "__main__":
    main()
