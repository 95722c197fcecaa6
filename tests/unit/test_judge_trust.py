"""A judge decides as far as its model is trusted, learned on graded answers: a judge that
reads as the instructor does takes fluent wrong answers to 0; one that says yes to everything
gets no trust and raises nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.bank.files import load_bank
from grader.config import JudgeSettings, Settings
from grader.engine.judging.checks import checks_for
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.engine.scoring import judge_trust
from grader.judge.base import LabelRequest
from grader.judge.scripted import ScriptedJudge
from grader.models import Grade, Submission
from tests.conftest import RUBRICS

DATA = Path(__file__).resolve().parents[1] / "data"
BANK = RUBRICS / "grad_accum_engineer.yaml"
SEEDS = [
    s
    for name in ("seed_answers.jsonl", "seed_answers_3.jsonl")
    for s in map(json.loads, (DATA / name).read_text(encoding="utf-8").splitlines())
    if s["question_id"].startswith("004-")
]


def oracle(seeds: list[dict], rubrics: dict) -> ScriptedJudge:
    """A judge that reads every criterion as the instructor graded it, and states a decisive
    part where the instructor credited its criterion."""
    shares: dict[tuple[str, str], float] = {}
    for s in seeds:
        for check in checks_for(rubrics[s["question_id"]], "zh"):
            shares[(s["answer"], check.subject)] = s["human_scores"][check.criterion] / check.points
        for c in rubrics[s["question_id"]].criteria:
            for part in c.parts:
                shares[(s["answer"], part.claim)] = s["human_scores"][c.id] / c.points

    def read(request: LabelRequest) -> dict[str, float]:
        if request.group.startswith("claim:"):  # a claim check: stated where the part was credited
            yes = float(shares.get((request.answer, request.subject), 0.0) >= 0.5)
            return {"否": 1 - yes, "是": yes}
        share = shares[(request.answer, request.subject)]
        values = [i / (len(request.labels) - 1) for i in range(len(request.labels))]
        best = min(range(len(values)), key=lambda i: abs(values[i] - share))
        return {label: float(i == best) for i, label in enumerate(request.labels)}

    return ScriptedJudge(label_script=read)


def yes_man() -> ScriptedJudge:
    """A judge that gives every criterion full marks, whatever the answer says."""
    return ScriptedJudge(
        label_script=lambda r: {label: float(label == r.labels[-1]) for label in r.labels}
    )


def grade_all(judge: ScriptedJudge, trust_file: Path | None) -> dict[str, Grade]:
    bank = load_bank(BANK)
    settings = Settings(judge=JudgeSettings(backend="scripted", plan="full", trust=trust_file))
    pipeline = Pipeline(bank, load_rubrics(BANK, bank), judge, settings)
    subs = [Submission(id=s["id"], question_id=s["question_id"], answer=s["answer"]) for s in SEEDS]
    return {g.submission_id: g for g in pipeline.grade_many(subs)}


def readings(grades: dict[str, Grade]) -> list[tuple[str, float, float]]:
    human = {s["id"]: s["human_scores"] for s in SEEDS}
    return [
        (f"{g.question_id}/{c.id}", g.details.judge_points[c.id] / c.max_points,
         human[g.submission_id][c.id] / c.max_points)
        for g in grades.values() if g.details.judge_points
        for c in g.criteria
    ]  # fmt: skip


def model_of(grades: dict[str, Grade]) -> str:
    (model,) = {g.provenance.model for g in grades.values() if g.details.judge_points}
    assert model
    return model


def mean_share(grades: dict[str, Grade], kinds: set[str]) -> float:
    picked = [g for s in SEEDS if s["kind"] in kinds for g in [grades[s["id"]]]]
    return sum((g.score or 0) / (g.max_score or 1) for g in picked) / len(picked)


@pytest.fixture(scope="module")
def rubrics():
    return load_rubrics(BANK, load_bank(BANK))


def test_a_reader_as_good_as_the_instructor_earns_full_trust_and_decides(tmp_path, rubrics):
    judge = oracle(SEEDS, rubrics)
    untrusted = grade_all(judge, None)  # the scripted model is measured nowhere: trust 0
    entry = judge_trust.fit(model_of(untrusted), readings(untrusted), data="seed sets 1, 3 (004)")
    assert entry.trust == 1.0
    judge_trust.store(entry, tmp_path / "trust.json")
    trusted = grade_all(judge, tmp_path / "trust.json")
    assert mean_share(trusted, {"wrong", "off_topic", "weak"}) == 0.0
    assert mean_share(trusted, {"strong"}) == 1.0
    assert mean_share(trusted, {"wrong"}) < mean_share(untrusted, {"wrong"})
    assert all(g.details.claims.judge_trust == 1.0 for g in trusted.values() if g.details.claims)


def test_a_judge_that_says_yes_to_everything_gets_no_trust_and_raises_nothing(tmp_path):
    untrusted = grade_all(yes_man(), None)
    entry = judge_trust.fit(model_of(untrusted), readings(untrusted), data="seed sets 1, 3 (004)")
    assert entry.trust == 0.0 and entry.judge_mae > entry.mean_mae
    judge_trust.store(entry, tmp_path / "trust.json")
    fitted = grade_all(yes_man(), tmp_path / "trust.json")
    assert {k: g.score for k, g in fitted.items()} == {k: g.score for k, g in untrusted.items()}
    assert mean_share(fitted, {"wrong"}) <= 0.25  # the rules' bound holds, not the judge's yes


def test_the_trust_file_keeps_every_model_and_an_unknown_model_is_not_trusted(tmp_path):
    path = tmp_path / "trust.json"
    rows = [(f"q/C{i % 3}", 0.5, 0.5) for i in range(30)]
    judge_trust.store(judge_trust.fit("big-model", rows, "x"), path)
    judge_trust.store(judge_trust.fit("other", [(k, 1.0, h) for k, _, h in rows], "x"), path)
    assert set(judge_trust.load(path)) == {"big-model", "other"}
    assert judge_trust.trust_of("big-model", path) == 0.0  # no better than the mean: 0
    assert judge_trust.trust_of("never-measured", path) == 0.0
    with pytest.raises(ValueError, match="a fit needs"):
        judge_trust.fit("m", rows[:5], "x")


def test_the_default_plan_reads_every_criterion_only_with_a_served_judge():
    from grader.engine.judging.budget import with_default_plan

    assert with_default_plan(Settings(judge=JudgeSettings(backend="openai"))).judge.plan == "full"
    assert (
        with_default_plan(Settings(judge=JudgeSettings(backend="scripted"))).judge.plan == "budget"
    )
    chosen = Settings(judge=JudgeSettings(backend="openai", plan="budget"))
    assert with_default_plan(chosen).judge.plan == "budget"  # a plan set is kept


def test_a_trusted_judge_reads_the_parts_the_rules_left_absent(tmp_path):
    from grader.engine.judging.claim_check import EMPTY

    def read(request: LabelRequest) -> dict[str, float]:
        if request.labels == ("否", "是"):  # a claim check: stated in any answer, not the empty one
            yes = 0.1 if request.answer == EMPTY["zh"] else 0.9
            return {"否": 1 - yes, "是": yes}
        return {
            label: float(i == len(request.labels) - 1) for i, label in enumerate(request.labels)
        }

    bank = load_bank(BANK)
    rubrics = load_rubrics(BANK, bank)
    entry = judge_trust.JudgeTrust(model="coverage-script", trust=1.0, readings=99, judge_mae=0.0,
                                   mean_mae=0.5, data="test")  # fmt: skip
    judge_trust.store(entry, tmp_path / "trust.json")
    settings = Settings(
        judge=JudgeSettings(backend="scripted", plan="full", trust=tmp_path / "trust.json")
    )
    pipeline = Pipeline(bank, rubrics, ScriptedJudge(label_script=read), settings)
    said = "这个方法很好用，大家都在用它。"  # nothing the rules read
    (grade,) = pipeline.grade_many([Submission(id="x", question_id="004-s5-q1", answer=said)])
    parts = grade.details.claims.parts
    assert parts and all(p.status == "asserted" and p.by == "judge" for p in parts)
    assert grade.details.claims.judge_trust == 1.0
