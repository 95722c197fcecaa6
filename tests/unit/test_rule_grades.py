"""Which off-topic answers score 0 without the judge (``rule_grades.zero_off_topic``): below
the second topic margin, whatever the classmates' answers say (one answer, one
grade). The question's graded answers may rescue one: they are the same for every run."""

from __future__ import annotations

import numpy as np

from grader.config import Settings, SignalSettings
from grader.engine.judging.rule_grades import nearest_scored, zero_off_topic
from grader.engine.signals.analysis import QuestionAnalysis
from grader.models import AnswerSignals, GradedAnswer


def signals(margin: float, off_topic: bool = True, peers: float | None = None) -> AnswerSignals:
    return AnswerSignals(
        reference_similarity=None,
        topic_margin=margin,
        off_topic=off_topic,
        peer_margin=peers,
        coverage_points=0.0,
    )


def test_by_default_only_answers_below_the_second_margin_score_zero_unread():
    settings = Settings()
    assert settings.signals.offtopic_zero_margin == 0.02 < settings.signals.offtopic_margin
    # the highest margin of a blatant off-topic text (docs/research/benchmarks-log.md): still 0
    assert zero_off_topic(signals(0.0171), settings.signals)
    assert zero_off_topic(signals(-0.3), settings.signals)
    # near the line (Mohler's one-line references put genuine answers here): graded
    assert not zero_off_topic(signals(0.02), settings.signals)
    assert not zero_off_topic(signals(0.024), settings.signals)
    # no signals: never by this rule
    assert not zero_off_topic(None, settings.signals)


def test_the_second_margin_at_the_first_or_unset_zeroes_every_off_topic_answer():
    for zero in (0.025, None):
        settings = Settings(signals=SignalSettings(offtopic_zero_margin=zero))
        assert zero_off_topic(signals(0.0249), settings.signals)
        assert zero_off_topic(signals(0.02), settings.signals)


def test_the_classmates_answers_change_no_score():
    """The peer margin read the answers that shared the run: alone, an answer had none and
    scored 0; among classmates it was graded. It only flags for review now."""
    for zero in (0.02, 0.025, None):
        settings = Settings(signals=SignalSettings(offtopic_zero_margin=zero))
        assert settings.signals.offtopic_peer_margin == 0.045
        for peers in (None, -0.1, 0.045, 0.2):
            assert zero_off_topic(signals(0.0, peers=peers), settings.signals)
            # flagged off topic by the class (a peer margin below 0.045), still graded
            assert not zero_off_topic(signals(0.03, peers=peers), settings.signals)


def test_none_in_the_environment_turns_either_rule_off(monkeypatch):
    monkeypatch.setenv("GRADER_OFFTOPIC_PEER_MARGIN", "none")
    monkeypatch.setenv("GRADER_OFFTOPIC_ZERO_MARGIN", "")
    settings = Settings()
    assert (
        settings.signals.offtopic_peer_margin is None
        and settings.signals.offtopic_zero_margin is None
    )
    monkeypatch.setenv("GRADER_OFFTOPIC_PEER_MARGIN", "0.05")
    assert Settings().signals.offtopic_peer_margin == 0.05


def test_a_close_positively_graded_answer_rescues_an_answer_below_the_zero_margin():
    """Mohler's one-line references put genuine answers below the margin; a graded answer
    that scored above 0 at cosine 0.875 or closer grades them (``one_grade_graded``,
    docs/research/explorations.md);
    the closest blatant text came to 0.8744 and still scores 0."""
    settings = Settings().signals
    assert settings.offtopic_graded_rescue == 0.875
    assert not zero_off_topic(signals(0.0), settings, nearest=0.875)
    assert not zero_off_topic(signals(-0.3), settings, nearest=0.95)
    assert zero_off_topic(signals(0.0), settings, nearest=0.8744)
    assert zero_off_topic(signals(0.0), settings, nearest=None)
    off = SignalSettings(offtopic_graded_rescue=1.01)  # above any cosine: never
    assert zero_off_topic(signals(0.0), off, nearest=1.0)


def test_the_graded_rescue_is_set_from_the_environment(monkeypatch):
    monkeypatch.setenv("GRADER_OFFTOPIC_GRADED_RESCUE", "0.9")
    assert Settings().signals.offtopic_graded_rescue == 0.9


def analysis_with(graded: list[tuple[str, float, list[float]]]) -> QuestionAnalysis:
    """The answer ``me`` at (1, 0) and graded answers (id, score, vector)."""
    vectors = {"me": np.array([1.0, 0.0])} | {i: np.array(v) for i, _, v in graded}
    return QuestionAnalysis(
        question_id="q",
        signals={},
        anchors={},
        graded=[
            (GradedAnswer(id=i, question_id="q", answer="a", score=s), signals(0.1))
            for i, s, _ in graded
        ],
        vectors=vectors,
    )


def test_the_nearest_graded_answer_that_scored_decides_never_the_answer_itself():
    # g1 is as close as can be but scored 0; "me" is the answer's own graded copy
    found = analysis_with(
        [("g1", 0.0, [1.0, 0.0]), ("g2", 2.0, [0.6, 0.8]), ("me", 5.0, [1.0, 0.0])]
    )
    assert nearest_scored(found, "me") == 0.6
    assert nearest_scored(analysis_with([("g1", 0.0, [1.0, 0.0])]), "me") is None
    assert nearest_scored(None, "me") is None
    assert nearest_scored(found, "absent") is None
