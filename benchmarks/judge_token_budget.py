"""Where a probability-mode answer's prompt tokens go, without running the model (issue 12).

On 2 CPU cores the probability mode's time is its uncached prompt tokens (prefill, about 25 ms
a token for the 1.5B here), so the issue's 3× over the verdict mode is a token budget. This
builds the requests ``judge_modes.py`` sends (the same answers, ``Pipeline.grade_many`` with
the scripted backend recording them), lays them out as the vLLM backend does (the answer's
shared part padded to cache blocks, ``label_prompt_ids``) and replays vLLM's prefix cache over
the backend's ``prefix_waves``: a request reuses the longest run of whole blocks an earlier
wave computed. Printed per answer: uncached tokens, and the parts they come from.

Needs the judge model's tokenizer (the model folder ``grader`` assembles on first use; no
weights are read).

    python -m benchmarks.judge_token_budget --out benchmarks/results/judge_token_budget.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks import judge_modes
from benchmarks.common import code_version
from grader.bank.files import load_bank
from grader.config import EmbeddingSettings, JudgeSettings, ScorerSettings, Settings
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.judge.base import LabelRequest, prefix_waves
from grader.judge.scripted import ScriptedJudge
from grader.judge.vllm_local import label_prompt_ids, resolve_model


class Recording(ScriptedJudge):
    """The scripted judge, keeping every probability-mode request it is sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[LabelRequest] = []

    def score_labels(self, requests):
        self.sent.extend(requests)
        return super().score_labels(requests)


def replay(requests: list[LabelRequest], prompts: list[list[int]], block: int) -> list[int]:
    """Each request's uncached tokens: whole blocks computed by an earlier wave are reused
    (vLLM recomputes at least the last token)."""
    seen: set[tuple[int, ...]] = set()
    uncached = [0] * len(requests)
    for wave in prefix_waves(requests):
        for i in wave:
            ids, hit = prompts[i], 0
            while (hit + 1) * block <= len(ids) - 1 and tuple(ids[: (hit + 1) * block]) in seen:
                hit += 1
            uncached[i] = len(ids) - hit * block
        for i in wave:
            ids = prompts[i]
            seen.update(tuple(ids[: k * block]) for k in range(1, len(ids) // block + 1))
    return uncached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=20)
    parser.add_argument("--questions", default="004-s5-q1,004-s5-q2")
    parser.add_argument("--block", type=int, default=32, help="vLLM's CPU cache block")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from transformers import AutoTokenizer

    settings = Settings(
        judge=JudgeSettings(backend="scripted"),
        scorer=ScorerSettings(choice="none"),
        embeddings=EmbeddingSettings(model="none"),
    )
    tokenizer = AutoTokenizer.from_pretrained(
        resolve_model(settings.judge.model, settings.cache.dir)[0]
    )
    submissions = judge_modes.answers(set(args.questions.split(",")), args.answers)
    judge = Recording()
    bank = load_bank(judge_modes.BANK)
    Pipeline(bank, load_rubrics(judge_modes.BANK, bank), judge, settings).grade_many(
        sorted(submissions, key=lambda s: s.question_id)
    )
    requests = sorted(
        judge.sent, key=lambda r: (r.group, tuple((m["role"], m["content"]) for m in r.messages))
    )
    shared: dict[str, list[int]] = {}
    laid = [label_prompt_ids(tokenizer, r, args.block, shared) for r in requests]
    prompts = [ids for ids, _ in laid]
    uncached = replay(requests, prompts, args.block)
    firsts = set(prefix_waves(requests)[0])
    answers = len(submissions)
    checks = [len(ids) - common for ids, common in laid]  # each check's own tokens
    report = {
        "benchmark": "judge_token_budget",
        "code": code_version("grader", "benchmarks"),
        "answers": answers,
        "questions": args.questions.split(","),
        "block": args.block,
        "requests": len(requests),
        "prompt_tokens": sum(map(len, prompts)),
        "uncached_tokens": sum(uncached),
        "per_answer": {
            "uncached": round(sum(uncached) / answers, 1),
            "first_request_per_question": round(sum(uncached[i] for i in firsts) / answers, 1),
            "checks": round(len(requests) / answers, 2),
            "check_tokens": round(sum(checks) / len(checks), 1),
            "answer_tokens": round(
                sum(len(tokenizer.encode(s.answer, add_special_tokens=False)) for s in submissions)
                / answers,
                1,
            ),
        },
    }
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
