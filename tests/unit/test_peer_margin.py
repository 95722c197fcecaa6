"""The classmates' answers as off-topic evidence (``AnswerSignals.peer_margin``).

A genuine answer that shares few words with a one-line reference still sits among the other
students' answers; blatant off-topic text sits far from all of them. The embedder double's
vectors are character histograms, so answers that share their wording are close.
"""

from __future__ import annotations

from grader.config import Settings, SignalSettings
from grader.engine.reading.rubrics import rubric_for
from grader.engine.signals.analysis import MIN_PEERS, analyze_question
from grader.models import Question, QuestionType, Submission
from tests.embedders import CountingEmbedder

QUESTION = Question(
    id="q1",
    number="1",
    section="一",
    type=QuestionType.SHORT_ANSWER,
    stem="什么是梯度累积？",
    answer="多个小批次的梯度累加后再更新一次参数。",
    points=5,
)
CLASS = [
    f"累加{tail}的梯度，再更新参数"
    for tail in (
        "多个批次",
        "几个小批次",
        "若干步",
        "多步",
        "四个批次",
        "每个批次",
        "两步",
        "八步",
        "小批次",
        "几步",
    )
]
OFF = "周末去爬山，山顶风景很美，晚上回家。"


def analyse(answers: list[str], **signals) -> dict:
    subs = [
        Submission(id=f"s{i:02d}", question_id="q1", answer=a, student=f"stu{i}")
        for i, a in enumerate(answers)
    ]
    settings = Settings(signals=SignalSettings(**signals))
    rubric = rubric_for(QUESTION, {})
    return analyze_question(QUESTION, rubric, subs, CountingEmbedder(), settings.signals).signals


def test_blatant_text_sits_below_every_classmate_and_unrelated_text_marks_zero():
    signals = analyse([*CLASS, OFF])
    genuine = [signals[f"s{i:02d}"].peer_margin for i in range(len(CLASS))]
    off = signals[f"s{len(CLASS):02d}"].peer_margin
    assert all(m is not None and m > 0.1 for m in genuine)
    assert off is not None and off < 0.05 < min(genuine)


def test_a_copy_of_the_same_text_does_not_vouch_for_it():
    alone = analyse([*CLASS, OFF])[f"s{len(CLASS):02d}"].peer_margin
    copied = analyse([*CLASS, OFF, OFF])
    for twin in (len(CLASS), len(CLASS) + 1):  # the zero moves a little: the class grew
        assert abs(copied[f"s{twin:02d}"].peer_margin - alone) < 0.01


def test_too_few_classmates_give_no_peer_margin():
    enough = analyse([*CLASS[:MIN_PEERS], OFF])  # OFF has MIN_PEERS others
    assert enough[f"s{MIN_PEERS:02d}"].peer_margin is not None
    short = analyse([*CLASS[: MIN_PEERS - 1], OFF])
    assert all(s.peer_margin is None for s in short.values())
    # a copy is no classmate: OFF's twin leaves it MIN_PEERS - 1 others
    twins = analyse([*CLASS[: MIN_PEERS - 1], OFF, OFF])
    assert twins[f"s{MIN_PEERS - 1:02d}"].peer_margin is None
    assert twins["s00"].peer_margin is not None


def test_far_from_every_classmate_is_off_topic_whatever_the_topic_margin():
    """One-line references let blatant text pass the topic margin; the class does not."""
    signals = analyse([*CLASS, OFF], offtopic_margin=-1.0)  # no topic margin is below -1
    assert signals[f"s{len(CLASS):02d}"].off_topic
    assert not any(signals[f"s{i:02d}"].off_topic for i in range(len(CLASS)))
    unchecked = analyse([*CLASS, OFF], offtopic_margin=-1.0, offtopic_peer_margin=None)
    assert not any(s.off_topic for s in unchecked.values())
