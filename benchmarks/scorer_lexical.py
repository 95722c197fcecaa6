"""Issue 13, second round: do wording (lexical) similarities help the scorer? Development only.

Three ideas, each measured on the development parts by the production procedure's CV
(``scorer_dev.shipped_cv``: GroupKFold(5) by question, both stages fit per fold, every
answer graded as ``scorer_core.rules.decide`` grades it), against the shipped design on the same table:

1. **Neighbour similarity** (``--only neighbours``): the graded neighbours' similarity to the
   answer, which picks the k nearest and weighs them (softmax(sim / T)), from the wording
   instead of (or beside) the e5 cosine: Jaccard of ``grader.text.features`` (words,
   Chinese character bigrams); TF-IDF cosine over character 1–3-grams (Chinese) or words 1–2
   (English), fit per question and part on that exam's answers; the mean of e5 cosine and
   a lexical one. The neighbour share alone (nothing fit) over a k × T grid, and the
   two-stage scorer with it (T by rescaling the similarities: softmax depends on sim / T
   only, and stage 2 reads no raw similarity).
2. **Reference similarity** (``--only reference``): TF-IDF cosine of answer and reference
   (same vectoriser, fit on the exam's answers and the reference) as a further stage-1
   feature. For the CV it rides in the table's unused ``cohort_coverage_z`` slot (research
   only).
3. **Off-topic rule** (``--only offtopic``): answers below the off-topic margin scored 0
   unread only under a stricter condition; figures over every answer a rule or the scorer
   grades (the rule's zeros included), so the designs are compared on the same answers.

    python -m benchmarks.scorer_lexical --out benchmarks/results/scorer_lexical.json
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr
from threadpoolctl import threadpool_limits

from benchmarks.common import code_version
from benchmarks.scorer_data import dev_rows, load_table, rule_and_scorer
from benchmarks.scorer_dev import shipped_cv
from benchmarks.splits import ads_items, mohler_items
from grader.calibrate.scorer_fit import EXPLAINABLE, SETTINGS, SHIPPED, ScorerDesign, fit_stages
from grader.calibrate.scorer_rows import Neighbours, ScorerRow
from grader.engine.scoring.scorer_model import DEFAULT_TEMPERATURE
from grader.text import features as wording
from grader.text import match_key

GRAPHS = (
    "e5",
    "jaccard",
    "tfidf",
    "tfidf_char24",
    "mean_e5_tfidf",
    "mean_e5_jaccard",
    "e5_3_tfidf_1",
)
KS = (3, 5, 10)
TEMPERATURES = (0.01, 0.02, 0.05, 0.1)


def texts() -> tuple[dict[str, str], dict[str, str]]:
    """(answer text by id, first reference by "dataset:question")."""
    answers, refs = {}, {}
    for name, items in (("mohler", mohler_items()), ("ads", ads_items())):
        for i in items:
            answers[i.id] = i.answer
            refs.setdefault(f"{name}:{i.question_id}", i.references[0])
    return answers, refs


def vectoriser(dataset: str, chars: bool = False):
    """TF-IDF: Chinese character 1–3-grams, English words 1–2; ``chars``: character 2–4-grams
    within words (English) or character 2–3-grams (Chinese) instead."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    if chars:
        return TfidfVectorizer(analyzer="char_wb" if dataset == "mohler" else "char",
                               ngram_range=(2, 4) if dataset == "mohler" else (2, 3),
                               preprocessor=match_key if dataset == "ads" else str.lower,
                               sublinear_tf=True)  # fmt: skip
    if dataset == "ads":
        return TfidfVectorizer(analyzer="char", ngram_range=(1, 3), preprocessor=match_key,
                               sublinear_tf=True)  # fmt: skip
    return TfidfVectorizer(analyzer="word", ngram_range=(1, 2), lowercase=True,
                           sublinear_tf=True)  # fmt: skip


def exam_matrices(rows: list[ScorerRow], answers: dict[str, str]) -> dict[str, np.ndarray]:
    """Similarity matrices among one exam's answers (same order as ``rows``)."""
    n = len(rows)
    index = {r.id: i for i, r in enumerate(rows)}
    e5 = np.eye(n)
    for r in rows:  # every other answer is a neighbour in all_other: the full e5 matrix
        found = r.neighbours["all_other"]
        for j, s in zip(found.ids, found.sims, strict=True):
            e5[index[r.id], index[j]] = s
    sets = [wording(answers[r.id]) for r in rows]
    jac = np.array([[len(a & b) / len(a | b) if a | b else 0.0 for b in sets] for a in sets])
    x = vectoriser(rows[0].dataset).fit_transform([answers[r.id] for r in rows])
    tfidf = (x @ x.T).toarray()
    y = vectoriser(rows[0].dataset, chars=True).fit_transform([answers[r.id] for r in rows])
    return {"e5": e5, "jaccard": jac, "tfidf": tfidf, "tfidf_char24": (y @ y.T).toarray(),
            "mean_e5_tfidf": (e5 + tfidf) / 2, "mean_e5_jaccard": (e5 + jac) / 2,
            "e5_3_tfidf_1": 0.75 * e5 + 0.25 * tfidf}  # fmt: skip


def dev_exams(table: list[ScorerRow]) -> dict[str, list[ScorerRow]]:
    exams: dict[str, list[ScorerRow]] = defaultdict(list)
    for r in table:
        if r.part == "dev":
            exams[r.question].append(r)
    return exams


def regraph(table: list[ScorerRow], answers: dict[str, str], graph: str,
            scale: float = 1.0) -> list[ScorerRow]:  # fmt: skip
    """The dev rows with each setting's neighbours re-ranked and re-weighted by ``graph``
    (times ``scale``: the same softmax as temperature T = 0.02 / scale)."""
    out = []
    for rows in dev_exams(table).values():
        sims = exam_matrices(rows, answers)[graph] * scale
        index = {r.id: i for i, r in enumerate(rows)}
        for r in rows:
            me = index[r.id]
            updated = {}
            for setting, found in r.neighbours.items():
                ids = sorted(found.ids, key=lambda j: (-sims[me, index[j]], j))
                updated[setting] = Neighbours(ids=ids, sims=[float(sims[me, index[j]])
                                                             for j in ids],
                                              identical=found.identical)  # fmt: skip
            out.append(r.model_copy(update={"neighbours": updated}))
    return out


def knn_alone(table: list[ScorerRow], setting: str, k: int, t: float) -> dict:
    out = {}
    for dataset in ("mohler", "ads"):
        rows = dev_rows(table, (dataset,), setting, k=k, temperature=t)
        share = rows.columns["knn_share"]
        ok = ~np.isnan(share)
        out[dataset] = (round(float(pearsonr(share[ok], rows.share[ok]).statistic), 3),
                        round(float(np.mean(np.abs(share[ok] - rows.share[ok])
                                            * rows.max_score[ok])), 3))  # fmt: skip
    return out


def brief(cv: dict) -> dict:
    """{setting: {dataset: (r, MAE, n)}} from ``shipped_cv``."""
    return {s: {d: (f["pearson"]["value"], f["mae"]["value"], f["n"])
                for d, f in v["scorer"].items()} for s, v in cv.items()}  # fmt: skip


def neighbours_study(table, answers) -> dict:
    out: dict = {"knn_alone": {}, "two_stage": {}}
    for graph in GRAPHS:
        print(graph, flush=True)
        regraphed = regraph(table, answers, graph)
        out["knn_alone"][graph] = {
            f"{s} k={k} T={t}": knn_alone(regraphed, s, k, t)
            for s in SETTINGS[1:] for k in KS for t in TEMPERATURES
        }  # fmt: skip
        for t in (0.02, 0.05, 0.1) if graph != "e5" else (0.02,):
            scaled = regraph(table, answers, graph, DEFAULT_TEMPERATURE / t)
            out["two_stage"][f"{graph} T={t}"] = brief(shipped_cv(scaled, SHIPPED, 0))
            print(graph, t, out["two_stage"][f"{graph} T={t}"], flush=True)
    return out


def with_reference(table, answers, refs) -> list[ScorerRow]:
    """Dev rows with the answer–reference TF-IDF cosine in the ``cohort_coverage_z`` slot."""
    out = []
    for question, rows in dev_exams(table).items():
        docs = [answers[r.id] for r in rows] + [refs[question]]
        x = vectoriser(rows[0].dataset).fit_transform(docs)
        cos = (x[:-1] @ x[-1].T).toarray().ravel()
        for r, c in zip(rows, cos, strict=True):
            out.append(r.model_copy(update={"features": r.features.model_copy(
                update={"cohort_coverage_z": float(c)})}))  # fmt: skip
    return out


def reference_study(table, answers, refs) -> dict:
    rows = with_reference(table, answers, refs)
    lex = ("cohort_coverage_z",)
    no_ngram = tuple(n for n in EXPLAINABLE if n != "ngram_coverage")
    designs = {
        "shipped": SHIPPED,
        "+ lexical reference cosine": ScorerDesign(stage1=(
            ("signals+cohort", (*EXPLAINABLE, "cohort_reference_z", *lex)),
            ("signals", (*EXPLAINABLE, *lex)))),
        "lexical reference cosine instead of ngram_coverage": ScorerDesign(stage1=(
            ("signals+cohort", (*no_ngram, "cohort_reference_z", *lex)),
            ("signals", (*no_ngram, *lex)))),
    }  # fmt: skip
    out: dict = {"raw_r": {}}
    for dataset in ("mohler", "ads"):
        mine = [r for r in rows if r.dataset == dataset and r.rule is None]
        v = [r.features.cohort_coverage_z for r in mine]
        out["raw_r"][dataset] = round(float(pearsonr(v, [r.share for r in mine]).statistic), 3)
    for name, design in designs.items():
        out[name] = brief(shipped_cv(rows, design, 0))
        print(name, out[name], flush=True)
    return out


OFFTOPIC_RULES = {
    "shipped: every answer below 0.025": lambda f: True,
    "below 0.02": lambda f: f.topic_margin < 0.02,
    "below 0.018": lambda f: f.topic_margin < 0.018,
    "below 0.015": lambda f: f.topic_margin < 0.015,
    "below 0.01": lambda f: f.topic_margin < 0.01,
    "below 0.005": lambda f: f.topic_margin < 0.005,
    "below 0.0": lambda f: f.topic_margin < 0.0,
    "below -0.01": lambda f: f.topic_margin < -0.01,
    "below -0.02 (E2b)": lambda f: f.topic_margin < -0.02,
    "ngram_coverage < 0.05": lambda f: f.ngram_coverage < 0.05,
    "ngram_coverage < 0.1": lambda f: f.ngram_coverage < 0.1,
    "ngram_coverage < 0.15": lambda f: f.ngram_coverage < 0.15,
    "semantic_coverage < 0.1": lambda f: f.semantic_coverage < 0.1,
}


# The integration test's two blatant off-topic answers (tests/integration/test_signals.py).
INTEGRATION_OFF_TOPIC = (
    "昨天晚上我们宿舍一起吃了火锅，然后去操场散步聊天，很开心。",
    "My favourite football team lost again last night, which was sad.",
)


def blatant_margins() -> list[float]:
    """Topic margins of off-topic text that must keep scoring 0: signal_calibration.py's seven
    off-topic answers and the integration test's two, each against the 8 seed questions
    (beside that question's non-blank seed answers, as ``signal_calibration.py`` runs it)."""
    from benchmarks.signal_calibration import OFF_TOPIC, ROOT, SEEDS
    from grader.bank.files import load_bank
    from grader.config import EmbeddingSettings, JudgeSettings, Settings
    from grader.embed import Embedder
    from grader.engine.reading.rubrics import load_rubrics, rubric_for
    from grader.engine.signals.analysis import analyze_question
    from grader.models import Submission

    settings = Settings(
        embeddings=EmbeddingSettings(model="multilingual-e5-small"),
        judge=JudgeSettings(backend="none"),
    )
    embedder = Embedder(settings.embeddings.model)
    seeds = [json.loads(line) for line in SEEDS.read_text(encoding="utf-8").splitlines()]
    texts = [*OFF_TOPIC, *INTEGRATION_OFF_TOPIC]
    margins = []
    for path in sorted((ROOT / "rubrics").glob("*.yaml")):
        bank = load_bank(path)
        loaded = load_rubrics(path, bank)
        for q in bank.questions:
            mine = [s for s in seeds if s["question_id"] == q.id and s["answer"].strip()]
            if not mine:
                continue
            subs = [Submission(id=s["id"], question_id=q.id, answer=s["answer"]) for s in mine]
            subs += [Submission(id=f"off{i}", question_id=q.id, answer=t)
                     for i, t in enumerate(texts)]  # fmt: skip
            rubric = rubric_for(q, loaded)
            signals = analyze_question(q, rubric, subs, embedder, settings.signals).signals
            margins += [round(signals[f"off{i}"].topic_margin, 4) for i in range(len(texts))]
    return sorted(margins)


def offtopic_study(table) -> dict:
    """Rules for which off-topic answers stay 0 unread; figures over rule + scorer grades."""
    dev = [r for r in table if r.part == "dev"]
    blatant = blatant_margins()
    out: dict = {"blatant_margins": blatant}
    for name, stays in OFFTOPIC_RULES.items():
        rows = [r.model_copy(update={"rule": None}) if r.rule == "off_topic"
                and not stays(r.features) else r for r in dev]  # fmt: skip
        found = rule_and_scorer(rows, lambda train: fit_stages(train, SHIPPED))
        zeros = [r for r in rows if r.rule == "off_topic"]
        out[name] = {"zeroed": {d: sum(r.dataset == d for r in zeros) for d in ("mohler", "ads")},
                     "zeroed_human_mean": round(float(np.mean([r.share for r in zeros]))
                                                if zeros else 0.0, 3), "cv": found}  # fmt: skip
        print(name, out[name], flush=True)
    return out


def _cells(found: dict, settings) -> str:
    return " | ".join(f"{found[s][d][0]:.3f} / {found[s][d][1]:.3f}"
                      for s in settings for d in ("mohler", "ads"))  # fmt: skip


def print_tables(result: dict) -> None:
    """The README's tables (markdown) from a results file."""
    graded = SETTINGS[1:]
    head = " | ".join(f"{s} {d} r / MAE" for s in graded for d in ("Mohler", "ADS"))
    print(f"| similarity | T | {head} |\n|---|---|" + "---|" * 6)
    for name, found in result["neighbours"]["two_stage"].items():
        graph, _, t = name.partition(" T=")
        print(f"| {graph} | {t} | {_cells(found, graded)} |")
    print(f"\n| similarity | k, T | {head} |\n|---|---|" + "---|" * 6)
    for graph, grid in result["neighbours"]["knn_alone"].items():
        for k, t in ((5, 0.02), (5, 0.05), (5, 0.1), (10, 0.1)):
            found = {s: grid[f"{s} k={k} T={t}"] for s in graded}
            print(f"| {graph} | {k}, {t} | {_cells(found, graded)} |")
    ref = result["reference"]
    head = " | ".join(f"{s} {d} r / MAE" for s in SETTINGS for d in ("Mohler", "ADS"))
    print(f"\nraw r {ref['raw_r']}\n\n| stage 1 | {head} |\n|---|" + "---|" * 8)
    for name, found in ref.items():
        if name != "raw_r":
            print(f"| {name} | {_cells(found, SETTINGS)} |")
    ot = result["offtopic"]
    blatant = ot["blatant_margins"]
    print(f"\n| zero unread when | Mohler zeroed (mean share) | blatant let through "
          f"(of {len(blatant)}) | {head} |\n|---|---|---|" + "---|" * 8)  # fmt: skip
    for name, found in ot.items():
        if name == "blatant_margins":
            continue
        stays = OFFTOPIC_RULES[name]
        through = sum(not stays(_Margin(m)) for m in blatant) if "coverage" not in name else "?"
        print(f"| {name} | {found['zeroed']['mohler']} ({found['zeroed_human_mean']:.2f}) | "
              f"{through} | {_cells(found['cv'], SETTINGS)} |")  # fmt: skip


class _Margin:
    """A topic margin as the off-topic rules read it (the blatant answers' count)."""

    def __init__(self, margin: float) -> None:
        self.topic_margin = margin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results")
    parser.add_argument("--tables", type=Path, help="print the README tables of a results file")
    parser.add_argument("--only", choices=("neighbours", "reference", "offtopic"))
    args = parser.parse_args()
    if args.tables:
        print_tables(json.loads(args.tables.read_text(encoding="utf-8")))
        return
    warnings.filterwarnings("ignore", category=UserWarning)
    threadpool_limits(1)
    started = time.perf_counter()
    table = load_table()
    answers, refs = texts()
    result: dict = {"benchmark": "scorer_lexical",
                    "code": code_version("grader", "benchmarks/*.py"),
                    "split": "development parts only (benchmarks/splits.py)",
                    "figures": "(Pearson, MAE in points, n) per setting and data set"}  # fmt: skip
    if args.only in (None, "neighbours"):
        result["neighbours"] = neighbours_study(table, answers)
    if args.only in (None, "reference"):
        result["reference"] = reference_study(table, answers, refs)
    if args.only in (None, "offtopic"):
        result["offtopic"] = offtopic_study(table)
    result["seconds"] = round(time.perf_counter() - started)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")


if __name__ == "__main__":
    main()
