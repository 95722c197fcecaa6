"""The engine's progress hook: every answer reported once, the judge's work in sub-batches that
keep prefix order and report answers as they finish, and grades unchanged by chunking."""

from __future__ import annotations

import pytest

from grader.bank.files import load_bank
from grader.config import EmbeddingSettings, JudgeSettings, ScorerSettings, Settings
from grader.engine.judging.progress import Stage, judge_each_once, judge_in_chunks
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.files.submissions import read_submissions
from tests.conftest import ROOT, RUBRICS
from tests.embedders import CountingEmbedder
from tests.judges import RecordingJudge

BANK_PATH = RUBRICS / "grad_accum_engineer.yaml"
EXAMPLES = ROOT / "examples" / "grad_accum_engineer.submissions.jsonl"


def test_items_are_reported_when_their_last_request_is_answered():
    # Item 0 needs a and b, item 1 needs b and c (b shared, asked once), item 2 needs nothing.
    batch = [(k, k.upper()) for k in "abc"]
    events: list[tuple[str, object]] = []

    def call(requests):
        events.append(("call", requests))
        return [r.lower() for r in requests]

    replies = judge_in_chunks(
        [["a", "b"], ["b", "c", "b"], []], batch, call, 2, lambda s, n: events.append((s, n))
    )
    assert replies == {"a": "a", "b": "b", "c": "c"}
    assert events == [
        (Stage.JUDGED, 1),  # the item with nothing to ask
        ("call", ["A", "B"]),
        (Stage.JUDGED, 1),  # item 0; item 1 still waits for c
        ("call", ["C"]),
        (Stage.JUDGED, 1),
    ]


@pytest.mark.parametrize("chunk", [None, 0])
def test_without_a_chunk_size_the_batch_is_one_call(chunk):
    calls = []
    judge_in_chunks(
        [["a"], ["b"]], [("a", 1), ("b", 2)], lambda r: calls.append(r) or r, chunk, None
    )
    assert calls == [[1, 2]]


def test_each_distinct_request_is_asked_once_and_every_item_gets_its_replies_in_order():
    calls = []

    def call(requests):
        calls.append(requests)
        return [r.upper() for r in requests]

    replies = judge_each_once(
        [["b", "a"], ["a", "A"], []], str.lower, lambda pair: pair[0], call, None, None
    )
    assert calls == [["a", "b"]]  # "a" and "A" are one request; sorted by ``order``
    assert replies == [["B", "A"], ["A", "A"], []]


def _example():
    bank = load_bank(BANK_PATH)
    return bank, load_rubrics(BANK_PATH, bank), read_submissions(EXAMPLES, bank)


@pytest.mark.parametrize("mode", ["probability", "verdict"])
def test_grade_many_reports_every_answer_once_and_judges_in_sorted_sub_batches(mode):
    bank, rubrics, submissions = _example()
    settings = Settings(
        judge=JudgeSettings(backend="scripted", mode=mode, chunk=7),
        embeddings=EmbeddingSettings(model="none"),
    )
    judge = RecordingJudge()
    events: list[tuple[Stage, int]] = []
    grades = Pipeline(bank, rubrics, judge, settings).grade_many(
        submissions, submissions, progress=lambda stage, n: events.append((stage, n))
    )

    counted: dict[Stage, int] = {}
    for stage, n in events:
        assert n > 0
        counted[stage] = counted.get(stage, 0) + n
    judged = [g for g in grades if g.provenance.backend == "scripted"]
    assert counted[Stage.JUDGED] == len(judged) > 0
    assert counted[Stage.RULED] + counted.get(Stage.SET_ASIDE, 0) + counted[Stage.JUDGED] == len(
        submissions
    )
    assert Stage.EMBEDDED not in counted  # no embedder, no signals

    # The judge advanced in steps, one event per finished call at most, never at the end only.
    judged_events = [n for stage, n in events if stage == Stage.JUDGED]
    assert len(judge.calls) > 3 and 1 < len(judged_events) <= len(judge.calls)
    assert all(len(call) <= 7 for call in judge.calls)
    # Sub-batches are slices of one prefix-sorted batch: the groups never come back.
    groups = [r.group for call in judge.calls for r in call]
    seen = [g for i, g in enumerate(groups) if i == 0 or g != groups[i - 1]]
    assert len(seen) == len(set(seen))


@pytest.mark.parametrize("mode", ["probability", "verdict"])
def test_chunking_changes_how_the_judge_is_called_not_the_grades(mode):
    bank, rubrics, submissions = _example()

    def run(chunk):
        settings = Settings(
            judge=JudgeSettings(backend="scripted", mode=mode, chunk=chunk),
            embeddings=EmbeddingSettings(model="none"),
        )
        judge = RecordingJudge()
        grades = Pipeline(bank, rubrics, judge, settings).grade_many(submissions, submissions)
        return judge.calls, [g.model_dump(exclude={"provenance"}) for g in grades]

    one_calls, one = run(None)
    chunked_calls, chunked = run(5)
    assert len(one_calls) == 1 and len(chunked_calls) > 1
    assert [r.id for r in one_calls[0]] == [r.id for call in chunked_calls for r in call]
    assert chunked == one


def test_signals_are_reported_per_question_before_the_judge():
    bank, rubrics, submissions = _example()
    settings = Settings(
        judge=JudgeSettings(backend="scripted", chunk=10),
        embeddings=EmbeddingSettings(model="none"),
        scorer=ScorerSettings(choice="none"),
    )
    events: list[tuple[Stage, int]] = []
    grades = Pipeline(bank, rubrics, RecordingJudge(), settings, CountingEmbedder()).grade_many(
        submissions, submissions, progress=lambda stage, n: events.append((stage, n))
    )
    stages = [stage for stage, _ in events]
    embedded = [n for stage, n in events if stage == Stage.EMBEDDED]
    essays = {s.question_id for s in submissions if not bank.get(s.question_id).type.objective}
    assert len(embedded) == len(essays)  # one event per question
    assert stages.index(Stage.JUDGED) > max(i for i, s in enumerate(stages) if s == Stage.EMBEDDED)
    counted = {stage: sum(n for s, n in events if s == stage) for stage in Stage}
    assert counted[Stage.RULED] + counted[Stage.SET_ASIDE] + counted[Stage.JUDGED] == len(grades)
    objective = sum(bank.get(s.question_id).type.objective for s in submissions)
    # Every subjective answer not scored by rule had its signals computed.
    assert counted[Stage.EMBEDDED] == len(submissions) - counted[Stage.RULED] > 0
    assert counted[Stage.RULED] >= objective
