"""A judge's claim check decides only where it was measured to be right: a margin per answer
language, fitted on graded answers; a part it states adds that part's credit, never the trust
in the rest of the answer, and a grade the rules verify too little of still goes to a person."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from grader.bank.files import load_bank
from grader.cli import app
from grader.config import JudgeSettings, Settings
from grader.engine.finish import verified
from grader.engine.judging.claim_check import EMPTY
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.engine.scoring import judge_trust
from grader.judge.base import LabelRequest
from grader.judge.scripted import ScriptedJudge
from grader.models import ReviewCode, Submission
from tests.conftest import RUBRICS

BANK = RUBRICS / "grad_accum_engineer.yaml"
QUESTION = "004-s5-q1"
ENGLISH = "It works well and many teams use it in practice every day."  # nothing the rules read
CHINESE = "这个方法很好用，大家都在用它。"


def rows(language: str, right: int, wrong: int, gap: float = 0.5) -> list[tuple]:
    """``right`` parts stated and credited, ``wrong`` stated and not, 40 not stated."""
    return ([(language, gap, True)] * right + [(language, gap, False)] * wrong
            + [(language, 0.05, False)] * 40)  # fmt: skip


def test_a_margin_is_fitted_per_language_where_the_stated_parts_were_credited():
    fitted = judge_trust.fit_claims(rows("en", 19, 1) + rows("zh", 10, 10), data="test")
    assert fitted["en"].precision == 0.95 and fitted["en"].stated == 20
    assert fitted["en"].margin == judge_trust.MARGINS[0]  # the smallest precise enough
    assert fitted["zh"].margin is None  # half of what it states was not credited
    assert fitted["zh"].precision == 0.5 and fitted["zh"].stated == 20


def test_a_yes_man_and_a_thin_fit_get_no_margin():
    yes_man = [("zh", 0.0, i % 2 == 0) for i in range(200)]  # as sure of an empty answer
    assert judge_trust.fit_claims(yes_man, data="test") == {}  # it states nothing
    few = rows("en", 9, 0)[: judge_trust.MIN_CLAIM_READINGS - 1]
    assert judge_trust.fit_claims(few, data="test") == {}


def test_the_fit_is_read_by_model_and_language(tmp_path):
    path = tmp_path / "trust.json"
    fitted = judge_trust.fit_claims(rows("en", 20, 0) + rows("zh", 10, 10), "t")
    entry = judge_trust.JudgeTrust(model="m", trust=0.0, readings=0, judge_mae=0.0, mean_mae=0.0,
                                   data="x", claims=fitted)  # fmt: skip
    judge_trust.store(entry, path)
    assert judge_trust.claim_fit("m", "en", path).margin == judge_trust.MARGINS[0]
    assert judge_trust.claim_fit("m", "zh", path).margin is None  # measured: not precise enough
    assert judge_trust.claim_fit("other", "en", path) is None  # never measured
    assert judge_trust.trust_of("m", path) == 0.0  # its criteria still decide nothing


def says_yes_to_answers(asked: list[LabelRequest]):
    """A claim check that states every part in any answer, none in the empty one."""

    def read(request: LabelRequest) -> dict[str, float]:
        if request.group.startswith("claim:"):
            asked.append(request)
            yes = 0.05 if request.answer in EMPTY.values() else 0.95
            return {"否": 1 - yes, "是": yes}
        return {label: float(label == request.labels[-1]) for label in request.labels}

    return read


@pytest.fixture
def english_only(tmp_path):
    """A trust file where the scripted model's claim check decides English answers only."""
    path = tmp_path / "trust.json"
    margins = judge_trust.fit_claims(rows("en", 20, 0), data="test")
    judge_trust.store(judge_trust.JudgeTrust(model="coverage-script", trust=0.0, readings=0,
                      judge_mae=0.0, mean_mae=0.0, data="x", claims=margins), path)  # fmt: skip
    return path


def grade(answer: str, trust_file, asked: list, plan: str = "budget"):
    bank = load_bank(BANK)
    settings = Settings(judge=JudgeSettings(backend="scripted", plan=plan, trust=trust_file))  # type: ignore[arg-type]
    judge = ScriptedJudge(label_script=says_yes_to_answers(asked))
    pipeline = Pipeline(bank, load_rubrics(BANK, bank), judge, settings)
    (graded,) = pipeline.grade_many([Submission(id="x", question_id=QUESTION, answer=answer)])
    return graded


def test_the_claim_check_decides_where_its_margin_was_fitted_and_nowhere_else(english_only):
    asked: list[LabelRequest] = []
    english = grade(ENGLISH, english_only, asked)
    parts = english.details.claims.parts
    assert asked and all(p.by == "judge" and p.status == "asserted" for p in parts)
    assert all(p.gap == pytest.approx(0.9) for p in parts)
    asked.clear()
    chinese = grade(CHINESE, english_only, asked)
    assert not asked  # no margin for Chinese answers: not asked
    assert all(p.by == "rules" and p.gap is None for p in chinese.details.claims.parts)


def test_stated_parts_add_credit_but_a_person_decides_a_grade_they_alone_lifted(english_only):
    graded = grade(ENGLISH, english_only, [])
    check = graded.details.claims
    assert sum(check.verified.values()) == graded.score > 0  # credit for the parts it stated
    assert check.unverified_share == verified.NOTHING_VERIFIED_SHARE  # but no trust in the rest
    assert graded.confidence is not None and graded.confidence <= verified.UNVERIFIED_CONFIDENCE
    assert graded.needs_review
    (reason,) = [r for r in graded.review_reasons if r.code == ReviewCode.THINLY_VERIFIED]
    assert "only 0 were verified" in reason.message and "claim check stated" in reason.message
    assert any("judge's claim check" in (c.rationale or "") for c in graded.criteria)


def test_plan_full_asks_every_answer_and_records_the_gaps_it_does_not_act_on(tmp_path):
    asked: list[LabelRequest] = []
    graded = grade(CHINESE, None, asked, plan="full")  # a model measured nowhere
    parts = graded.details.claims.parts
    assert asked and all(p.gap is not None and p.by == "rules" for p in parts)
    assert all(p.status == "absent" for p in parts)


def test_calibrate_judge_trust_learns_the_claim_margin_from_recorded_gaps(tmp_path):
    grades, human = tmp_path / "grades.jsonl", tmp_path / "human.csv"
    graded = grade(CHINESE, None, [], plan="full")
    criteria = [c.id for c in graded.criteria]
    records, lines = [], ["submission_id,question_id,score," + ",".join(criteria)]
    for n in range(12):  # the instructor credits every criterion of half the answers
        record = graded.model_copy(update={"submission_id": f"s{n}"})
        records.append(record.model_dump_json())
        given = [graded.criteria[i].max_points * (n % 2) for i in range(len(criteria))]
        lines.append(f"s{n},{QUESTION},{sum(given):g}," + ",".join(f"{g:g}" for g in given))
    grades.write_text("\n".join(records) + "\n", encoding="utf-8")
    human.write_text("\n".join(lines) + "\n", encoding="utf-8")
    trust = tmp_path / "trust.json"
    result = CliRunner().invoke(app, ["calibrate", "judge-trust", "--human", str(human),
                                      "--grades", str(grades), "--trust-file", str(trust)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "zh answers: is not asked: no margin reached 90%" in result.output
    entry = json.loads(trust.read_text(encoding="utf-8"))["coverage-script"]
    assert entry["claims"]["zh"]["margin"] is None  # it states the parts of every answer
    assert entry["claims"]["zh"]["precision"] == 0.5


def test_a_claim_check_measured_imprecise_is_not_asked_even_of_a_judge_trusted_on_criteria(
    tmp_path,
):
    path = tmp_path / "trust.json"
    imprecise = judge_trust.fit_claims(rows("zh", 10, 10), data="test")
    judge_trust.store(judge_trust.JudgeTrust(model="coverage-script", trust=1.0, readings=99,
                      judge_mae=0.0, mean_mae=0.5, data="x", claims=imprecise), path)  # fmt: skip
    asked: list[LabelRequest] = []
    grade(CHINESE, path, asked)
    assert not asked
    judge_trust.store(judge_trust.JudgeTrust(model="coverage-script", trust=1.0, readings=99,
                      judge_mae=0.0, mean_mae=0.5, data="x"), path)  # fmt: skip
    grade(CHINESE, path, asked)
    assert asked  # never measured on claims: a judge trusted on criteria states at MARGIN


def test_a_broken_trust_file_is_named_and_a_rewritten_one_read_again(tmp_path):
    from grader.errors import ConfigError

    path = tmp_path / "trust.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"trust\.json: not a judge trust file"):
        judge_trust.trust_of("m", path)
    path.unlink()
    entry = judge_trust.JudgeTrust(model="m", trust=0.7, readings=30, judge_mae=0.1,
                                   mean_mae=0.4, data="x")  # fmt: skip
    judge_trust.store(entry, path)
    assert judge_trust.trust_of("m", path) == 0.7
    judge_trust.store(entry.model_copy(update={"trust": 0.2}), path)  # same size, new content
    assert judge_trust.trust_of("m", path) == 0.2
