"""Claims the rules left unread, asked of the judge against an empty answer: a judge that
says yes to everything reads nothing; one that tells the answers apart reads the claim."""

from __future__ import annotations

from grader.engine.judging.claim_check import MARGIN, ClaimAsk, judge_claims, stated
from grader.judge.base import LabelRequest
from grader.judge.scripted import ScriptedJudge
from grader.models import Question, QuestionType

QUESTION = Question(id="q1", number="1", section="一", type=QuestionType.SHORT_ANSWER,
                    stem="简述梯度累积的原理。", answer="……", points=5)  # fmt: skip
CLAIM = "梯度累积可以减少计算量"
SAYS = "梯度累积把运算省掉了一大半。"
SILENT = "梯度累积在显存不够时模拟大批次。"


def asks() -> list[ClaimAsk]:
    return [ClaimAsk("a/C4/wrong0", QUESTION, CLAIM, SAYS),
            ClaimAsk("b/C4/wrong0", QUESTION, CLAIM, SILENT)]  # fmt: skip


def test_a_yes_man_reads_nothing():
    judge = ScriptedJudge(label_script=lambda r: {"否": 0.05, "是": 0.95})
    gaps = judge_claims(judge, asks())
    assert gaps == {"a/C4/wrong0": 0.0, "b/C4/wrong0": 0.0}
    assert not any(stated(g) for g in gaps.values())


def test_a_judge_that_tells_answers_apart_reads_the_claim():
    def read(request: LabelRequest) -> dict[str, float]:
        yes = 0.9 if request.answer == SAYS else 0.4  # the empty answer and the silent one
        return {"否": 1 - yes, "是": yes}

    judge = ScriptedJudge(label_script=read)
    gaps = judge_claims(judge, asks())
    assert stated(gaps["a/C4/wrong0"]) and gaps["a/C4/wrong0"] >= MARGIN
    assert not stated(gaps["b/C4/wrong0"])


def test_the_empty_answer_is_asked_once_per_claim_and_the_answer_is_data():
    seen: list[LabelRequest] = []

    def read(request: LabelRequest) -> dict[str, float]:
        seen.append(request)
        return {"否": 0.5, "是": 0.5}

    judge_claims(ScriptedJudge(label_script=read), asks())
    assert len(seen) == 3  # two answers, one empty answer for the one claim
    for request in seen:
        assert "<student_answer>" in request.messages[1]["content"]
        assert request.labels == ("否", "是")
