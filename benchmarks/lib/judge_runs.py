"""The judge's plans and modes end to end, for ``judge_throughput --plans`` and ``--modes``.

**Plans** (``--plans budget,full``): seconds per answer with each plan, the same answers — seed answers to 5-point Chinese questions
(instructor rubrics) and Mohler answers (English, the 5-point scale rubric) — graded by
``Pipeline.grade_many`` with each plan in turn, the same judge engine and e5 embedder, the
shipped scorer. The embedder keeps no vector cache, so every timed run embeds its answers as
a first grading does; an untimed pass (with a scripted judge) loads e5, and one untimed vLLM
call pays the engine's first-call costs; the judge's prefix cache is reset before each plan, and
with ``--repeats 2`` the second round runs the plans in the other order. Each language is
one batch (its answers are each other's cohort), timed on its own.

Reported per plan and language: wall seconds per answer, judge requests and judge seconds;
per language the ratio full/budget; and whether the plans gave the same scores (they should:
the shipped scorer weighs no judge reading of Chinese answers, and English answers are
judged alike in both plans). On a shared machine read the ratios, not the seconds.

**Modes** (``--modes verdict,probability``): the same seed answers graded through
``Pipeline.grade_many`` once per judge mode on ONE engine (loaded once; its prefix cache reset
before each mode, so each starts cold), in batches as ``grader grade`` makes them. No
embedder and no scorer: this measures the judge's cost, not the scorer's. Per mode: answers/s,
seconds per answer, prompt tokens, prefix-cache hits, generated tokens, how many grades came
out scored; the ratio of the two rates is measured in one run on one machine. The answers:
the hand-graded seed answers (sets 1 and 2) to ``--questions``, every n-th so kinds mix.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from collections.abc import Sequence
from itertools import zip_longest
from typing import Any

from benchmarks.lib.common import ROOT, code_version, command, write_result
from benchmarks.lib.judge_answers import DEFAULT_QUESTIONS, ids, mohler_items, seed_items
from grader.bank.files import load_bank
from grader.config import EmbeddingSettings, ScorerSettings, Settings
from grader.embed import Embedder
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.judge import make_judge
from grader.judge.base import Completion, Judge, JudgeRequest, LabelRequest, LabelScores
from grader.judge.scripted import ScriptedJudge
from grader.models import Bank, Grade, Question, Rubric, Submission

AnswerCase = tuple[Question, Rubric, str]


class CountingJudge(Judge):
    """A judge that counts the requests it forwards, per answer language, and their seconds."""

    def __init__(self, inner: Judge, language_of: dict[str, str]):
        self.inner, self.language_of = inner, language_of
        self.backend, self.model = inner.backend, inner.model
        self.requests: dict[str, int] = defaultdict(int)
        self.seconds = 0.0

    def _count(self, requests: Sequence[JudgeRequest] | Sequence[LabelRequest]) -> None:
        for r in requests:
            self.requests[self.language_of.get(r.id.split("#")[0].split("/")[0], "other")] += 1

    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
        self._count(requests)
        started = time.monotonic()
        try:
            return self.inner.complete(requests)
        finally:
            self.seconds += time.monotonic() - started

    def score_labels(self, requests: Sequence[LabelRequest]) -> list[LabelScores]:
        self._count(requests)
        started = time.monotonic()
        try:
            return self.inner.score_labels(requests)
        finally:
            self.seconds += time.monotonic() - started


def interleave(items: list[AnswerCase], count: int) -> list[AnswerCase]:
    """``count`` items taken round-robin over their questions, so every question is in."""
    by_question: dict[str, list[AnswerCase]] = defaultdict(list)
    for item in items:
        by_question[item[0].id].append(item)
    spread = [i for row in zip_longest(*by_question.values()) for i in row if i is not None]
    return spread[:count]


def cases(
    zh: list[AnswerCase], en: list[AnswerCase]
) -> tuple[Bank, dict[str, Rubric], dict[str, list]]:
    """One bank and rubric set for both languages; the submissions per language."""
    questions = {q.id: q for q, _, _ in (*zh, *en)}
    rubrics = {q.id: r for q, r, _ in (*zh, *en)}
    batches = {
        lang: [
            Submission(id=f"{lang}-{k}", question_id=q.id, answer=a, student=f"{lang}-{k}")
            for k, (q, _, a) in enumerate(items)
        ]
        for lang, items in (("zh", zh), ("en", en))
        if items
    }
    return Bank(name="judge-plans", questions=list(questions.values())), rubrics, batches


def run_plans(
    base: Settings,
    judge: Judge,
    zh: list[AnswerCase],
    en: list[AnswerCase],
    plans: list[str],
    repeats: int,
) -> dict[str, Any]:
    """Every plan on the same answers, per language; figures, ratios and score agreement."""
    bank, rubrics, batches = cases(zh, en)
    language = {s.id: lang for lang, subs in batches.items() for s in subs}
    counting = CountingJudge(judge, language)
    # no vector cache: every timed run embeds its answers, as a first grading does
    embedder = Embedder(base.embeddings.model, cache_dir=base.cache.dir, disk_cache=False)

    def pipeline(plan: str, with_judge: Judge) -> Pipeline:
        settings = base.model_copy(update={"judge": base.judge.model_copy(update={"plan": plan})})
        return Pipeline(bank, rubrics, with_judge, settings, embedder=embedder)

    for subs in batches.values():  # untimed: e5 loads, then the engine's first call
        pipeline("full", ScriptedJudge()).grade_many(subs, cohort=subs)
    pipeline("full", judge).grade_many(batches["en" if "en" in batches else "zh"][:1])
    runs: dict[str, dict[str, list[float]]] = {p: defaultdict(list) for p in plans}
    asked: dict[str, dict[str, int]] = {}
    judge_s: dict[str, float] = defaultdict(float)
    scores: dict[str, dict[str, float | None]] = {p: {} for p in plans}
    for round_ in range(repeats):
        for plan in plans if round_ % 2 == 0 else plans[::-1]:
            _cold(judge)
            counting.requests.clear()
            before = counting.seconds
            for lang, subs in batches.items():
                started = time.monotonic()
                grades = pipeline(plan, counting).grade_many(subs, cohort=subs)
                runs[plan][lang].append((time.monotonic() - started) / len(subs))
                scores[plan].update(_scores(grades))
            asked[plan] = dict(counting.requests)
            judge_s[plan] += (counting.seconds - before) / repeats
            print(f"[plans] {plan} round {round_ + 1}: {_rounded(runs[plan])}", flush=True)
    return {
        "answers": {lang: len(subs) for lang, subs in batches.items()},
        "questions": {
            lang: sorted({s.question_id for s in subs}) for lang, subs in batches.items()
        },
        "plans": {
            p: {
                "s_per_answer": {lang: round(min(v), 3) for lang, v in runs[p].items()},
                "s_per_answer_all": _overall(runs[p], batches),
                "judge_requests_per_run": asked.get(p, {}),
                "judge_s_per_run": round(judge_s[p], 2),
            }
            for p in plans
        },
        "ratios": _ratios(runs, batches, plans),
        "same_scores": _agreement(scores, language, plans),
    }


WAKE = LabelRequest(
    id="wake", group="wake", messages=[{"role": "user", "content": "1+1="}], labels=("1", "2")
)


def _cold(judge: Judge) -> None:
    """An empty prefix cache and a ready engine: the first batch after vLLM's reset pays
    seconds its plan did not cause (without this, the same 8 English checks took 5.5 s per
    answer where they were the plan's first judge call and 1.9 s where they were not), so one
    request no plan shares is asked first."""
    reset = getattr(judge, "reset_prefix_cache", None)
    if callable(reset):
        reset()
        judge.score_labels([WAKE])


def _scores(grades: list[Grade]) -> dict[str, float | None]:
    return {g.submission_id: g.score for g in grades}


def _rounded(runs: dict[str, list[float]]) -> dict[str, float]:
    return {lang: round(v[-1], 2) for lang, v in runs.items()}


def _overall(runs: dict[str, list[float]], batches: dict[str, list]) -> float:
    """Seconds per answer over both languages: each language's best round, weighted."""
    total = sum(min(runs[lang]) * len(subs) for lang, subs in batches.items())
    return round(total / sum(len(subs) for subs in batches.values()), 3)


def _ratios(runs: dict, batches: dict[str, list], plans: list[str]) -> dict[str, float]:
    """The slower plan's seconds per answer over the faster's (``full/budget``)."""
    if len(plans) < 2:
        return {}
    a, b = plans[-1], plans[0]
    out = {lang: round(min(runs[a][lang]) / min(runs[b][lang]), 3) for lang in batches}
    out["all"] = round(_overall(runs[a], batches) / _overall(runs[b], batches), 3)
    return {f"{a}/{b} {k}": v for k, v in out.items()}


def _agreement(scores: dict, language: dict[str, str], plans: list[str]) -> dict[str, Any]:
    """Per language: how many answers got the same score in every plan, the largest gap."""
    out: dict[str, Any] = {}
    for lang in sorted(set(language.values())):
        ids = [i for i, v in language.items() if v == lang]
        gaps = [
            max(abs((scores[p][i] or 0.0) - (scores[plans[0]][i] or 0.0)) for p in plans)
            for i in ids
        ]
        out[lang] = {"same": sum(g == 0 for g in gaps), "of": len(ids), "max_gap": max(gaps)}
    return out


def main_plans(args: argparse.Namespace, base: Settings, machine: dict) -> None:
    """``judge_throughput --plans``: load the judge once, run the plans, write the report."""
    plans = ids(args.plans)
    judge_settings = base.judge.model_copy(update={"mode": "probability"})
    settings = base.model_copy(
        update={"judge": judge_settings, "scorer": ScorerSettings(choice="default")}
    )
    zh = interleave(seed_items(ids(args.questions or DEFAULT_QUESTIONS)), args.answers)
    en = interleave(mohler_items(None, args.answers * 4), args.answers)
    started = time.monotonic()
    judge = make_judge(settings)
    load_s = round(time.monotonic() - started, 2)
    try:
        figures = run_plans(settings, judge, zh, en, plans, args.repeats)
    finally:
        judge.close()
    report = {
        "benchmark": "judge_throughput --plans",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command(),
        "machine": machine,
        "code": code_version("grader", "prompts", __file__),
        "backend": args.backend,
        "model": args.model,
        "model_load_s": load_s,
        **figures,
    }
    print(json.dumps({"ratios": report["ratios"], "same_scores": report["same_scores"]}))
    write_result(report, args.out)


# --- the modes -------------------------------------------------------------------------------

MODE_BANK = ROOT / "rubrics" / "grad_accum_engineer.yaml"
MODE_ANSWERS = [ROOT / "tests" / "data" / f for f in ("seed_answers.jsonl", "seed_answers_2.jsonl")]
GRADE_BATCH = 64  # as ``grader grade`` batches


def mode_answers(questions: set[str], count: int) -> list[Submission]:
    """Every n-th of the seed answers to ``questions``, kinds mixed, in file order."""
    rows = [
        json.loads(line)
        for path in MODE_ANSWERS
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    rows = [r for r in rows if r["question_id"] in questions]
    step = max(1, len(rows) // count)
    chosen = rows[::step][:count]
    return [
        Submission(id=r["id"], question_id=r["question_id"], answer=r["answer"]) for r in chosen
    ]


def run_mode(mode: str, judge: Judge, base: Settings, submissions: list[Submission]) -> dict:
    """One mode over ``submissions``, cold prefix cache, no embedder, no scorer."""
    settings = base.model_copy(
        update={
            "judge": base.judge.model_copy(update={"mode": mode}),
            "scorer": ScorerSettings(choice="none"),
            "embeddings": EmbeddingSettings(model="none"),
        }
    )
    bank = load_bank(MODE_BANK)
    pipeline = Pipeline(bank, load_rubrics(MODE_BANK, bank), judge, settings)
    reset = getattr(judge, "reset_prefix_cache", None)  # in-process vLLM only
    if callable(reset):
        reset()
    ordered = sorted(submissions, key=lambda s: s.question_id)
    started = time.perf_counter()
    grades = []
    for start in range(0, len(ordered), GRADE_BATCH):
        grades += pipeline.grade_many(ordered[start : start + GRADE_BATCH])
    wall = time.perf_counter() - started
    prompt = sum((g.provenance.prompt_tokens or 0) for g in grades)
    cached = sum((g.provenance.cached_tokens or 0) for g in grades)
    return {
        "mode": mode,
        "answers": len(grades),
        "scored": sum(g.score is not None for g in grades),
        "wall_s": round(wall, 2),
        "answers_per_s": round(len(grades) / wall, 4),
        "s_per_answer": round(wall / len(grades), 2),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "cached_share": round(cached / prompt, 3) if prompt else None,
        "generated_tokens": sum((g.provenance.completion_tokens or 0) for g in grades),
        "scores": {g.submission_id: g.score for g in grades},
    }


def main_modes(args: argparse.Namespace, base: Settings, machine: dict) -> None:
    """``judge_throughput --modes``: one engine, each mode in turn, the ratio of their rates."""
    import torch

    from grader.judge.vllm_local import engine_dtype

    questions = set(ids(args.questions or DEFAULT_QUESTIONS))
    submissions = mode_answers(questions, args.answers)
    started = time.perf_counter()
    judge = make_judge(base)
    load_s = time.perf_counter() - started
    try:
        results = [run_mode(m, judge, base, submissions) for m in ids(args.modes)]
    finally:
        judge.close()
    rates = {r["mode"]: r["answers_per_s"] for r in results}
    report = {
        "benchmark": "judge_throughput --modes",
        "command": command(),
        "machine": machine,
        "model": base.judge.model,
        "dtype": engine_dtype(base.judge.vllm.dtype, torch.cuda.is_available()),
        "code": code_version("grader", "prompts", __file__),
        "load_s": round(load_s, 1),
        "modes": results,
    }
    if {"verdict", "probability"} <= rates.keys():
        report["speedup_probability_over_verdict"] = round(
            rates["probability"] / rates["verdict"], 2
        )
    for r in results:
        print(
            f"{r['mode']:<12} {r['answers_per_s']:>8.3f} answers/s {r['s_per_answer']:>7.2f} "
            f"s/answer, prompt {r['prompt_tokens']}, cached {r['cached_share']}, "
            f"generated {r['generated_tokens']}"
        )
    write_result(report, args.out)
