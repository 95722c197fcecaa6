"""The in-process vLLM backend's options reach vLLM, without loading a model.

``vllm.LLM`` is replaced by a recorder: what is checked is the translation from settings and
requests to vLLM's arguments, which benchmarks rely on (cache off, dummy weights, fixed length).
"""

import multiprocessing
import os

import pytest

pytest.importorskip("vllm")

import vllm

from grader.config import JudgeSettings, Settings, VllmSettings
from grader.judge.base import JudgeRequest
from grader.judge.vllm_local import VllmJudge


class RecordingLLM:
    def __init__(self, **options):
        self.options = options


@pytest.fixture(autouse=True)
def _restore_environment(monkeypatch):
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")  # the backend sets it on CPU


def test_settings_reach_the_engine(monkeypatch, tmp_path):
    monkeypatch.setattr(vllm, "LLM", RecordingLLM)
    settings = Settings(
        judge=JudgeSettings(
            model=str(tmp_path),
            vllm=VllmSettings(enable_prefix_caching=False, load_format="dummy", max_model_len=2048),
        )
    )
    judge = VllmJudge.from_settings(settings.judge, settings.cache.dir)
    assert judge.llm.options["enable_prefix_caching"] is False
    assert judge.llm.options["load_format"] == "dummy"
    assert judge.llm.options["max_model_len"] == 2048
    assert judge.model == tmp_path.name


def test_request_knobs_reach_sampling(monkeypatch, tmp_path):
    monkeypatch.setattr(vllm, "LLM", RecordingLLM)
    judge = VllmJudge(str(tmp_path))
    request = JudgeRequest(
        id="a", group="g", messages=[], json_schema={"type": "object"}, max_tokens=40
    )
    constrained = judge._params(request)
    assert constrained.structured_outputs.json == {"type": "object"}
    assert constrained.min_tokens == 0 and constrained.max_tokens == 40
    free = judge._params(request.model_copy(update={"structured_output": False, "min_tokens": 64}))
    assert free.structured_outputs is None
    assert free.min_tokens == 40  # never above max_tokens, which vLLM would refuse


class EnvironmentRecordingLLM(RecordingLLM):
    def __init__(self, **options):
        super().__init__(**options)
        self.multiprocessing = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING")
        self.reserved = os.environ.get("VLLM_CPU_NUM_OF_RESERVED_CPU")


@pytest.mark.parametrize("daemon", [True, False])
def test_engine_core_stays_in_a_daemonic_process(monkeypatch, tmp_path, daemon):
    """A Celery prefork pool process is daemonic: vLLM's default engine-core child process
    would fail there ("daemonic processes are not allowed to have children")."""
    monkeypatch.setattr(vllm, "LLM", EnvironmentRecordingLLM)
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "")  # restored after the test
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING")
    monkeypatch.setitem(multiprocessing.current_process()._config, "daemon", daemon)
    judge = VllmJudge(str(tmp_path))
    assert judge.llm.multiprocessing == ("0" if daemon else None)


@pytest.mark.parametrize(("cores", "reserved"), [(2, "0"), (1, "0"), (16, None)])
def test_a_small_cpu_computes_on_every_core(monkeypatch, tmp_path, cores, reserved):
    """vLLM keeps a core for its scheduler: on 2 cores that halves the compute."""
    monkeypatch.setattr(vllm, "LLM", EnvironmentRecordingLLM)
    monkeypatch.setattr("grader.judge.vllm_local._has_cuda", lambda: False)
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    monkeypatch.setenv("VLLM_CPU_NUM_OF_RESERVED_CPU", "")  # restored after the test
    monkeypatch.delenv("VLLM_CPU_NUM_OF_RESERVED_CPU")
    judge = VllmJudge(str(tmp_path))
    assert judge.llm.reserved == reserved


def test_dtype_auto_follows_the_hardware(monkeypatch):
    from grader.judge import vllm_local

    assert vllm_local.engine_dtype("float16", cuda=False) == "float16"  # asked for: kept
    assert vllm_local.engine_dtype("auto", cuda=True) == "bfloat16"

    class Info:
        def __init__(self, flags):
            self.flags = flags

        def read_text(self):
            return f"flags\t: fpu sse avx2 {self.flags}\n"

    monkeypatch.setattr(vllm_local, "Path", lambda _: Info(""))
    assert vllm_local.engine_dtype("auto", cuda=False) == "float32"
    monkeypatch.setattr(vllm_local, "Path", lambda _: Info("avx512_bf16"))
    assert vllm_local.engine_dtype("auto", cuda=False) == "bfloat16"
