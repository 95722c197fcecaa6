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

from grader.engine.judging.asking import ask
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
