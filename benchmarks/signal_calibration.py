"""Where the embedding thresholds come from: the seed answers against text they must not match.

Three checks, all through ``grader.engine.signals.analysis.analyze_question`` with the default settings:

* off-topic: the topic margin of every non-blank hand-graded seed answer (strong to weak,
  Chinese and English) against that of off-topic answers written for this check (not the
  everyday sentences the margin is measured from); ``GRADER_OFFTOPIC_MARGIN`` must sit between;
* copies: cosines of light-edit copies and of independent paraphrases of three answers;
  ``GRADER_DUPLICATE_COSINE`` must sit between;
* key-point coverage: Spearman of the semantic coverage and of the n-gram coverage
  (``grader.engine.signals.coverage``) with the human totals of the seed answers.

    python -m benchmarks.signal_calibration --out benchmarks/results/signal_calibration.json
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from benchmarks.common import ROOT, code_version
from grader.bank.files import load_bank
from grader.config import EmbeddingSettings, Settings
from grader.embed import Embedder
from grader.engine.reading.rubrics import load_rubrics, rubric_for
from grader.engine.signals.analysis import analyze_question
from grader.engine.signals.coverage import coverage_points
from grader.models import Submission

SEEDS = ROOT / "tests" / "data" / "seed_answers.jsonl"

OFF_TOPIC = [
    "中午的红烧肉很好吃，下午我们去打篮球。",
    "周末去爬山，山顶风景很美，晚上回家。",
    "快递明天下午才能送到。",
    "我奶奶喜欢在阳台上种花。",
    "The weather is nice and I want to go to the beach.",
    "My favourite football team lost again last night.",
    "Please remember to buy milk on your way home.",
]

# (original, light-edit copy, independent paraphrase)
COPIES = [
    (
        "梯度累积是把多个micro-batch的梯度累加起来，再统一调用一次optimizer.step()，这样可以在显存有限时模拟更大的batch size。每个micro-batch的loss要除以累积步数。",
        "梯度累积就是把多个micro-batch的梯度累加起来，然后统一调用一次optimizer.step()，这样能在显存有限时模拟更大的batch size。每个micro-batch的loss需要除以累积步数。",
        "显存不够时，可以连续跑几个小批次、只做反向传播不更新参数，等梯度攒够了再更新一次，相当于用了大批量。注意损失要按步数缩放。",
    ),
    (
        "Gradient accumulation sums the gradients of several micro-batches and calls optimizer.step() once, which simulates a larger batch when memory is limited. Divide each loss by the number of steps.",
        "Gradient accumulation adds up the gradients of several micro-batches and calls optimizer.step() once, simulating a larger batch when GPU memory is limited. Each loss is divided by the number of steps.",
        "When GPU memory is short, run several small batches backward without updating, then update once: it acts like a big batch. Scale the loss by the step count.",
    ),
    (
        "学习率预热是在训练开始阶段让学习率从很小的值逐渐增大到目标值，避免一开始梯度太大导致训练不稳定。",
        "学习率预热是指在训练刚开始时让学习率从很小的值慢慢增大到目标值，防止一开始梯度过大使训练不稳定。",
        "训练初期先用较小的学习率，然后线性升到设定值，这样模型不会因为初始更新过猛而发散。",
    ),
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results file")
    args = parser.parse_args()

    from scipy.stats import spearmanr

    settings = Settings(embeddings=EmbeddingSettings(model="multilingual-e5-small"))
    embedder = Embedder(settings.embeddings.model)
    questions, rubrics = {}, {}
    for path in sorted((ROOT / "rubrics").glob("*.yaml")):
        bank = load_bank(path)
        loaded = load_rubrics(path, bank)
        for q in bank.questions:
            questions[q.id] = q
            rubrics[q.id] = rubric_for(q, loaded)
    seeds = [json.loads(line) for line in SEEDS.read_text(encoding="utf-8").splitlines()]
    by_question = defaultdict(list)
    for seed in seeds:
        if seed["answer"].strip():
            by_question[seed["question_id"]].append(seed)

    genuine, off_topic, human, semantic, ngram = [], [], [], [], []
    for qid, rows in by_question.items():
        question, rubric = questions[qid], rubrics[qid]
        subs = [Submission(id=r["id"], question_id=qid, answer=r["answer"]) for r in rows]
        subs += [
            Submission(id=f"off{i}", question_id=qid, answer=t) for i, t in enumerate(OFF_TOPIC)
        ]
        signals = analyze_question(question, rubric, subs, embedder, settings.signals).signals
        for r in rows:
            genuine.append((qid, r["kind"], signals[r["id"]].topic_margin))
            human.append(r["human_total"] / rubric.points)
            semantic.append(signals[r["id"]].coverage_points / rubric.points)
            ngram.append(coverage_points(rubric, r["answer"]) / rubric.points)
        off_topic += [signals[f"off{i}"].topic_margin for i in range(len(OFF_TOPIC))]

    vectors = [embedder.encode(list(triple)) for triple in COPIES]
    copies = [float(v[0] @ v[1]) for v in vectors]
    paraphrases = [float(v[0] @ v[2]) for v in vectors]
    result = {
        "benchmark": "signal_calibration",
        "code": code_version("grader", __file__),
        "model": embedder.name,
        "offtopic_margin_setting": settings.signals.offtopic_margin,
        "genuine_margin": {"n": len(genuine), "min": min(m for *_, m in genuine),
                           "max": max(m for *_, m in genuine)},
        "offtopic_margin": {"n": len(off_topic), "min": min(off_topic), "max": max(off_topic)},
        "genuine_flagged_off_topic": [g for g in genuine
                                      if g[2] < settings.signals.offtopic_margin],
        "duplicate_cosine_setting": settings.signals.duplicate_cosine,
        "copy_cosines": [round(c, 4) for c in copies],
        "paraphrase_cosines": [round(c, 4) for c in paraphrases],
        "coverage_spearman_vs_human": {
            "n": len(human),
            "semantic": round(float(spearmanr(semantic, human).statistic), 3),
            "ngram": round(float(spearmanr(ngram, human).statistic), 3),
        },
    }  # fmt: skip
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
