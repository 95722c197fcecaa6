"""How the embedded judge names the end of its engine process (``grader.judge.engine_death``):
vLLM's own error then says only "see stack trace (above)", with nothing above."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from types import SimpleNamespace

from grader.judge.engine_death import (
    MemoryBudget,
    available_gib,
    exited_process,
    weights_gib,
)
from grader.judge.vllm_local import VllmJudge


def _sleep() -> None:
    time.sleep(60)


def _vllm_llm(processes: list) -> SimpleNamespace:
    """The attributes of a ``vllm.LLM`` that lead to its engine processes (vLLM 0.x V1)."""
    manager = SimpleNamespace(processes=processes)
    core = SimpleNamespace(resources=SimpleNamespace(engine_manager=manager))
    return SimpleNamespace(llm_engine=SimpleNamespace(engine_core=core))


def _killed_process() -> multiprocessing.Process:
    process = multiprocessing.get_context("spawn").Process(target=_sleep, name="EngineCore_DP0")
    process.start()
    os.kill(process.pid, signal.SIGKILL)  # what the out-of-memory killer does
    process.join(30)
    return process


def test_a_killed_engine_process_is_found_with_its_signal():
    process = _killed_process()
    assert exited_process(_vllm_llm([process])) == ("EngineCore_DP0", -9)


def test_running_or_inline_engines_report_nothing():
    running = SimpleNamespace(name="EngineCore_DP0", exitcode=None)
    assert exited_process(_vllm_llm([running])) is None
    assert exited_process(SimpleNamespace(llm_engine=SimpleNamespace())) is None  # in-process
    assert exited_process(None) is None


def test_the_judge_puts_the_cause_in_place_of_see_stack_trace_above():
    judge = VllmJudge.__new__(VllmJudge)  # no engine loaded: only its failure is read
    judge._budget = MemoryBudget(needed_gib=5.0, free_gib=2.5)
    dead = Exception("EngineCore encountered an issue. See stack trace (above) for the root cause.")
    judge.llm = _vllm_llm([SimpleNamespace(name="EngineCore_DP0", exitcode=None)])
    assert judge._rejected(dead) == f"vLLM rejected the request: {dead}"
    judge.llm = _vllm_llm([_killed_process()])
    said = judge._rejected(dead)
    assert "stack trace" not in said
    assert said.startswith("the judge's worker was killed, likely out of memory: about 5.0 GB")


def test_memory_figures_from_meminfo_and_the_checkpoint(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 24000000 kB\nMemAvailable: 3145728 kB\n")
    assert available_gib(meminfo) == 3.0
    assert available_gib(tmp_path / "absent") is None
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"\0" * 1024)
    (model / "config.json").write_text(json.dumps({"torch_dtype": "bfloat16"}))
    assert weights_gib(str(model), "float32") == 2 * 1024 / 1024**3  # twice its files
    assert weights_gib(str(model), "bfloat16") == 1024 / 1024**3
    assert weights_gib(str(tmp_path), "float32") is None  # no weights: not known
