"""The OpenAI-compatible backend against a small HTTP server on 127.0.0.1 (a real socket).

It answers like an OpenAI-compatible server and fails on purpose, to test the retry and
error paths; the integration suite runs the same backend against a real `vllm serve`.
"""

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("openai")

from grader.engine.judging.asking import ask
from grader.judge.base import JudgeRequest, LabelRequest
from grader.judge.openai_compat import OpenAIJudge
from grader.models import Criterion, Rubric

RUBRIC = Rubric(question_id="q", points=1, criteria=[Criterion(id="C1", description="d", points=1)])
GOOD = '{"C1":{"evidence":"x","rationale":"r","points":1},"feedback":"f"}'


class Server:
    def __init__(self):
        self.requests: list[dict] = []
        self.fail_first: dict[str, int] = {}  # answer -> how many 500s before success
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(
                    200, {"object": "list", "data": [{"id": "served-model", "object": "model"}]}
                )

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                answer = body["messages"][-1]["content"]
                if outer.fail_first.get(answer, 0) > 0:
                    outer.fail_first[answer] -= 1
                    return self._send(500, {"error": {"message": "overloaded"}})
                if answer == "bad request":
                    return self._send(400, {"error": {"message": "prompt too long"}})
                if body.get("logprobs"):
                    return self._send(200, logprob_reply(body))
                self._send(200, {
                    "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": GOOD}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                              "prompt_tokens_details": {"cached_tokens": 8}},
                })  # fmt: skip

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


# What a server's next-token distribution looks like: a label with and without a leading space,
# and tokens that are not labels at all.
TOP = [("是", -0.4), (" 是", -2.0), ("否", -1.5), ("The", -3.0), ("\n", -4.0)]


def logprob_reply(body):
    top = [{"token": t, "logprob": lp, "bytes": None} for t, lp in TOP[: body["top_logprobs"]]]
    return {
        "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
        "choices": [{"index": 0, "finish_reason": "length",
                     "message": {"role": "assistant", "content": "是"},
                     "logprobs": {"content": [{"token": "是", "logprob": -0.4, "bytes": None,
                                               "top_logprobs": top}]}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 1, "total_tokens": 31,
                  "prompt_tokens_details": {"cached_tokens": 16}},
    }  # fmt: skip


def request(answer):
    return JudgeRequest(id=answer, group="g", messages=[{"role": "user", "content": answer}],
                        json_schema={"type": "object"}, rubric=RUBRIC, answer=answer, max_tokens=50)  # fmt: skip


def test_batch_with_retries_and_a_bad_item():
    with Server() as server:
        server.fail_first = {"flaky": 2}
        judge = OpenAIJudge(server.url, concurrency=4, retries=3, backoff_s=0.01)
        replies = ask(
            judge, [request("ok"), request("flaky"), request("bad request")], max_reasks=0
        )
        assert judge.model == "served-model"  # asked the server when none was configured
        assert replies[0].verdict.criteria["C1"].points == 1
        assert replies[1].verdict is not None  # recovered after two 500s
        assert replies[2].verdict is None and "prompt too long" in replies[2].error
        assert not replies[2].transient
        assert replies[0].cached_tokens == 8 and replies[0].prompt_tokens == 10
        sent = server.requests[0]
        assert sent["response_format"]["type"] == "json_schema"
        assert sent["response_format"]["json_schema"]["schema"] == {"type": "object"}
        assert sent["max_tokens"] == 50 and sent["temperature"] == 0.0


def test_server_down_is_transient():
    judge = OpenAIJudge("http://127.0.0.1:9/v1", model="m", retries=1, backoff_s=0.01, timeout_s=2)
    (reply,) = ask(judge, [request("x")])
    assert reply.verdict is None and reply.transient


def test_free_text_and_min_tokens_for_benchmarks():
    with Server() as server:
        judge = OpenAIJudge(server.url, model="m", retries=0)
        free = request("ok").model_copy(update={"structured_output": False, "min_tokens": 20})
        judge.complete([free, request("ok")])
        by_constraint = sorted(server.requests, key=lambda body: "response_format" in body)
        assert "response_format" not in by_constraint[0] and by_constraint[0]["min_tokens"] == 20
        assert "response_format" in by_constraint[1] and "min_tokens" not in by_constraint[1]


def test_label_scores_from_top_logprobs():
    with Server() as server:
        judge = OpenAIJudge(server.url, model="m", retries=0)
        asks = [
            LabelRequest(id="a", group="g", messages=[{"role": "user", "content": "ok"}],
                         labels=("否", "是")),
            LabelRequest(id="b", group="g", messages=[{"role": "user", "content": "ok"}],
                         labels=("A", "B")),
        ]  # fmt: skip
        yes_no, letters = judge.score_labels(asks)
        sent = server.requests[0]
        assert sent["max_tokens"] == 1 and sent["logprobs"] is True
        assert sent["top_logprobs"] == 20 and "response_format" not in sent
    p_yes = math.exp(-0.4) + math.exp(-2.0)  # "是" and " 是" are one label
    p_no = math.exp(-1.5)
    assert yes_no.probabilities["是"] == pytest.approx(p_yes / (p_yes + p_no))
    assert yes_no.mass == pytest.approx(p_yes + p_no)
    assert yes_no.prompt_tokens == 30 and yes_no.cached_tokens == 16
    # no label among the top tokens: an error, never a made-up distribution
    assert letters.error and "A/B" in letters.error and not letters.probabilities


def test_label_scores_server_down_is_transient():
    judge = OpenAIJudge("http://127.0.0.1:9/v1", model="m", retries=0, timeout_s=2)
    (scores,) = judge.score_labels(
        [LabelRequest(id="a", group="g", messages=[{"role": "user", "content": "x"}],
                      labels=("否", "是"))]
    )  # fmt: skip
    assert scores.error and scores.transient
