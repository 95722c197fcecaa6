"""The wording model of a question's graded answers (``grader.engine.scoring.wording``): what it
learns, when it declines, and that the engine's pool and the scorer's training rows read it
the same way."""

import numpy as np

from grader.calibrate.scorer_rows import Neighbours, ScorerRow, setting_features
from grader.engine.scoring.scorer_core.pool import GradedPool
from grader.engine.scoring.scorer_model import AnswerFeatures
from grader.engine.scoring.wording import MIN_GRADED, WordingModel, wording_residual
from grader.models import GradedAnswer

GOOD = [
    "采用链式存储结构，插入删除不需要移动元素。",
    "链式存储，插入和删除只改指针。",
    "宜用链表，链式存储插入删除快。",
    "链式存储结构，不必移动大量元素。",
]
WEAK = [
    "采用顺序存储结构，可以随机访问。",
    "顺序表，访问快。",
    "用数组顺序存储。",
    "顺序存储结构比较好。",
]


def test_learns_which_wording_the_marks_reward():
    model = WordingModel.fit(GOOD + WEAK, [0.3] * 4 + [-0.3] * 4, "zh")
    assert model is not None
    linked, sequential = model.predict(["链式存储，插入删除不移动元素。", "顺序存储，随机访问。"])
    assert linked > 0.1 > -0.1 > sequential


def test_english_answers_share_ngrams_inside_words():
    good = ["a stack pops the last item pushed", "stacks are last in first out", "LIFO stack"]
    weak = ["a queue serves the first item", "queues are first in first out", "FIFO queue"]
    model = WordingModel.fit(good + weak, [0.2] * 3 + [-0.2] * 3, "en")
    assert model is not None
    stacked, queued = model.predict(["the stacking order is LIFO", "it is queued FIFO"])
    assert stacked > 0 > queued


def test_declines_with_too_few_answers_or_no_ngram():
    assert WordingModel.fit(GOOD[: MIN_GRADED - 1], [0.1] * (MIN_GRADED - 1), "zh") is None
    assert WordingModel.fit([" \n"] * MIN_GRADED, [0.0] * MIN_GRADED, "zh") is None
    assert wording_residual(GOOD[:2], [0.1, 0.2], "链式", "zh") is None


def _pool(answers: list[str], shares: list[float], base: list[float]) -> GradedPool:
    graded = [
        GradedAnswer(id=f"g{i}", question_id="q", answer=a, score=s * 10)
        for i, (a, s) in enumerate(zip(answers, shares, strict=True))
    ]
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(answers), 8))
    return GradedPool(
        answers=graded,
        vectors=vectors / np.linalg.norm(vectors, axis=1, keepdims=True),
        shares=np.array(shares),
        base=np.array(base),
        keys=list(answers),  # distinct texts: their own match keys
        language="zh",
    )


def test_pool_leaves_the_answer_itself_out_of_its_wording_model():
    shares = [0.9, 0.8, 0.9, 0.85, 0.2, 0.3, 0.1, 0.25]
    pool = _pool(GOOD + WEAK, shares, [0.5] * 8)
    new, _ = pool.neighbours("new", "链式存储，插入删除快。", pool.vectors[0])
    itself, _ = pool.neighbours("g0", GOOD[0], pool.vectors[0])
    alone = wording_residual(GOOD[1:] + WEAK, [s - 0.5 for s in shares[1:]], GOOD[0], "zh")
    assert new["wording_residual"] > 0
    assert itself["wording_residual"] == alone  # fit without g0, as a held-out answer


def test_training_rows_read_the_wording_as_the_engine_pool_does():
    """The default scorer is fit on ``setting_features``; production reads ``GradedPool``:
    the same graded answers, shares and stage-1 shares give the same residual."""
    answers = GOOD + WEAK
    shares = [0.9, 0.8, 0.9, 0.85, 0.2, 0.3, 0.1, 0.25]
    base = [0.6, 0.5, 0.7, 0.4, 0.5, 0.4, 0.3, 0.6]
    pool = _pool(answers, shares, base)
    text = "链式存储结构，插入删除只改指针。"
    expected, _ = pool.neighbours("new", text, pool.vectors[3])
    ids = [f"g{i}" for i in range(len(answers))]
    row = ScorerRow(
        id="new",
        question="q",
        share=0.5,
        points=10,
        answer=text,
        features=AnswerFeatures(language="zh"),
        neighbours={"all_other": Neighbours(ids=ids, sims=[0.9] * len(ids))},
    )
    got = setting_features(
        row,
        "all_other",
        dict(zip(ids, shares, strict=True)),
        dict(zip(ids, base, strict=True)),
        texts=dict(zip(ids, answers, strict=True)),
    )
    assert got.wording_residual is not None
    assert abs(got.wording_residual - expected["wording_residual"]) < 1e-12
    without = setting_features(
        row, "all_other", dict(zip(ids, shares, strict=True)), dict(zip(ids, base, strict=True))
    )
    assert without.wording_residual is None  # no texts given: not computed
