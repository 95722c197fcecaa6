"""The in-process vLLM backend on the CPU build with a tiny random model (plumbing only),
and on CUDA where present."""

from __future__ import annotations

import pytest

from grader.engine.judging.asking import ask
from grader.engine.judging.verdict import verdict_schema
from grader.judge.base import JudgeRequest, LabelRequest
from grader.models import Criterion, Rubric

pytestmark = pytest.mark.slow

RUBRIC = Rubric(question_id="q", points=2, criteria=[Criterion(id="C1", description="d", points=2)])
SYSTEM = "你是阅卷老师。" + "评分细则：C1 两分，写出梯度累加得分。" * 20  # a long shared prefix


def request(i: int, answer: str, system: str = SYSTEM) -> JudgeRequest:
    return JudgeRequest(
        id=str(i),
        group="q",
        messages=[{"role": "system", "content": system},
                  {"role": "user", "content": f"<student_answer>\n{answer}\n</student_answer>"}],
        json_schema=verdict_schema(RUBRIC),
        rubric=RUBRIC,
        answer=answer,
        max_tokens=400,
    )  # fmt: skip


@pytest.fixture(scope="module")
def tiny_judge(tiny_model):
    from grader.judge.vllm_local import VllmJudge, VllmOptions

    judge = VllmJudge(str(tiny_model), VllmOptions(max_model_len=2048, kv_cache_gib=1))
    yield judge
    judge.close()


def test_batch_gives_schema_valid_verdicts_in_order_with_cache_hits(tiny_judge):
    requests = [request(i, f"第{i}份答案：梯度累加。") for i in range(6)]
    replies = ask(tiny_judge, requests, max_reasks=1)
    assert len(replies) == 6
    valid = [r for r in replies if r.verdict is not None]
    # random weights, but the grammar makes every reply valid JSON of the schema
    assert len(valid) == 6, [r.error for r in replies]
    for reply in valid:
        assert 0 <= reply.verdict.criteria["C1"].points <= 2
        assert reply.prompt_tokens > 100 and reply.completion_tokens > 0
    # the shared system prompt is computed once and then read from the prefix cache
    assert sum(r.cached_tokens or 0 for r in replies) > 0


def test_one_oversized_item_does_not_fail_the_batch(tiny_judge):
    huge = "很长的答案" * 2000  # far beyond max_model_len
    completions = tiny_judge.complete(
        [request(0, "短答案"), request(1, huge), request(2, "另一个")]
    )
    assert completions[0].text and completions[2].text
    assert completions[1].error and "rejected" in completions[1].error


def test_label_scores_are_distributions_over_the_labels(tiny_judge):
    def ask_labels(i, answer, labels=("0", "1", "2")):
        return LabelRequest(
            id=str(i), group="q", labels=labels, answer=answer,
            messages=[{"role": "system", "content": SYSTEM},
                      {"role": "user", "content": f"<student_answer>{answer}</student_answer>C1？"}],
        )  # fmt: skip

    scores = tiny_judge.score_labels(
        [ask_labels(0, "梯度累加"), ask_labels(1, "别的"), ask_labels(2, "x", ("否", "是"))]
    )
    for s, labels in zip(scores, (("0", "1", "2"), ("0", "1", "2"), ("否", "是")), strict=True):
        assert s.error is None, s.error
        assert set(s.probabilities) == set(labels)
        assert sum(s.probabilities.values()) == pytest.approx(1.0)
        assert 0 < s.mass <= 1.0 + 1e-6 and s.prompt_tokens > 100
    # the shared system prompt is read from the prefix cache after the first request
    assert sum(s.cached_tokens or 0 for s in scores) > 0
    # a label that is more than one token is the caller's bug: an error, not a guess
    (bad,) = tiny_judge.score_labels([ask_labels(3, "x", ("完全正确", "错"))])
    assert bad.error and "not one" in bad.error


def test_an_answers_further_checks_compute_only_their_own_question(tiny_judge):
    """The part the checks share is padded to whole cache blocks: after the answer's first
    check, each other check reads all of it from the cache."""
    head = (
        "<student_answer>\n"
        + "梯度累加就是多算几个小批次再更新参数。" * 3
        + "\n</student_answer>\n\n"
    )

    def check(n: int) -> LabelRequest:
        return LabelRequest(
            id=f"a/{n}", group="q", labels=("否", "是"), answer="a", shared_chars=len(head),
            messages=[{"role": "system", "content": SYSTEM},
                      {"role": "user", "content": f"{head}第{n}项：写到了吗？"}],
        )  # fmt: skip

    checks = [check(n) for n in range(1, 5)]
    tiny_judge.reset_prefix_cache()
    scores = tiny_judge.score_labels(checks)
    assert all(s.error is None for s in scores), [s.error for s in scores]
    tokenizer = tiny_judge.llm.get_tokenizer()
    own = len(tokenizer.encode("第1项：写到了吗？<|im_end|>\n<|im_start|>assistant\n"))
    for later in scores[1:]:
        assert later.prompt_tokens % 32 == own % 32  # the shared part ends on a block boundary
        assert later.prompt_tokens - later.cached_tokens == own


@pytest.mark.gpu
def test_cuda_batch_with_dummy_weights(tiny_model):
    from grader.judge.vllm_local import VllmJudge, VllmOptions

    judge = VllmJudge(str(tiny_model), VllmOptions(load_format="dummy", max_model_len=2048))
    try:
        replies = ask(judge, [request(i, "梯度累加") for i in range(16)], max_reasks=1)
        assert sum(r.verdict is not None for r in replies) == 16
    finally:
        judge.close()
