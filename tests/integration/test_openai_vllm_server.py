"""The OpenAI-compatible backend against a real `vllm serve` on 127.0.0.1 (tiny model)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from grader.engine.asking import ask
from tests.integration.test_vllm_backend import request

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def vllm_server(tiny_model, tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "vllm.log"
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(tiny_model),
        "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "judge",
        "--dtype", "bfloat16", "--enforce-eager", "--enable-prefix-caching", "--max-model-len", "2048",
        "--structured-outputs-config", json.dumps({"backend": "xgrammar", "disable_any_whitespace": True}),
        "--enable-prompt-tokens-details",
    ]  # fmt: skip
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 300
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"vllm server exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vllm server not ready after 300 s: {log.read_text()[-2000:]}")
            time.sleep(1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def test_openai_backend_against_vllm_serve(vllm_server):
    from grader.judge.openai_compat import OpenAIJudge

    judge = OpenAIJudge(vllm_server, concurrency=4, timeout_s=120)
    replies = ask(judge, [request(i, f"答案{i}：梯度累加。") for i in range(4)], max_reasks=1)
    assert judge.model == "judge"
    assert all(r.verdict is not None for r in replies), [r.error for r in replies]
    assert all(r.prompt_tokens > 100 for r in replies)
    assert (
        sum(r.cached_tokens or 0 for r in replies) > 0
    )  # the shared prefix hit the server's cache


def test_label_scores_continue_the_judges_reply(vllm_server, tiny_model):
    """vLLM's server takes the reply's opening to continue: the prompt it reads ends with the
    opening, not with a new assistant turn after it."""
    from transformers import AutoTokenizer

    from grader.judge.base import LabelRequest
    from grader.judge.openai_compat import OpenAIJudge

    def check(n: int) -> LabelRequest:
        return LabelRequest(
            id=str(n), group="q", labels=("否", "是"), answer="a",
            messages=[{"role": "system", "content": "你是阅卷老师。" * 40},
                      {"role": "user", "content": "<student_answer>梯度累加。</student_answer>"},
                      {"role": "assistant", "content": f"第{n}项："}],
        )  # fmt: skip

    judge = OpenAIJudge(vllm_server, concurrency=1, timeout_s=120)
    first, second = judge.score_labels([check(1), check(2)])
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    text = tokenizer.apply_chat_template(
        check(1).messages, tokenize=False, continue_final_message=True
    )
    continued = tokenizer.encode(text, add_special_tokens=False)
    assert text.endswith("<|im_start|>assistant\n第1项：")
    for scores in (first, second):
        # random weights put no label among the top tokens (the in-process backend restricts
        # sampling to the labels, the server does not); what matters here is the prompt
        assert scores.error is None or "none of the labels" in scores.error, scores.error
        assert scores.prompt_tokens == len(continued)
    # the conversation before the opening is shared: the second check reads it from the cache
    assert second.cached_tokens and second.cached_tokens > 100
