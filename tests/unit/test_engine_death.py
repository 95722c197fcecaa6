"""How the embedded judge names the end of its engine (``grader.judge.engine_death``): vLLM's
own error then says only "see stack trace (above)", with nothing above.

Checked by hand against vLLM 0.32 (CPU) with a tiny random model: SIGKILL of the engine core
gave "the judge's worker was killed…"; SIGKILL of vLLM's worker (the engine core's child, the
process with the weights) gave "the judge's worker process (VLLM::Worker) died unexpectedly",
and the kill-for-memory line where the kernel's out-of-memory count rose."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from types import SimpleNamespace

import pytest

from grader.judge.engine_death import (
    Ending,
    EngineWatch,
    MemoryBudget,
    available_gib,
    death_message,
    endings,
    oom_kills,
    weights_gib,
)
from grader.judge.vllm_local import VllmJudge

STACK_TRACE = "EngineCore encountered an issue. See stack trace (above) for the root cause."


def _sleep() -> None:
    time.sleep(60)


def _vllm_llm(processes: list) -> SimpleNamespace:
    """The attributes of a ``vllm.LLM`` that lead to its engine processes (vLLM 0.x V1)."""
    manager = SimpleNamespace(processes=processes)
    core = SimpleNamespace(resources=SimpleNamespace(engine_manager=manager))
    return SimpleNamespace(llm_engine=SimpleNamespace(engine_core=core))


def _started(name: str = "EngineCore_DP0") -> multiprocessing.Process:
    process = multiprocessing.get_context("spawn").Process(target=_sleep, name=name)
    process.start()
    return process


def _kill(process: multiprocessing.Process) -> None:
    os.kill(process.pid, signal.SIGKILL)  # what the out-of-memory killer does
    process.join(30)


def test_a_killed_engine_process_is_found_with_its_signal():
    process = _started()
    _kill(process)
    ended = endings(_vllm_llm([process]), EngineWatch())
    assert ended == [Ending("EngineCore_DP0", -9, process.pid)]


def test_a_process_that_is_not_a_vllm_child_is_seen_by_its_disappearance():
    """vLLM's worker is the engine core's child, not ours: no exit status, only its end."""
    before = _started("unrelated")
    watch = EngineWatch()
    worker = _started("VLLM::Worker")  # started while the engine loaded
    watch.loaded()
    assert worker.pid in watch.processes and before.pid not in watch.processes
    assert watch.gone() == []
    _kill(before)  # a process that is not the engine's ending says nothing about it
    assert watch.gone() == []
    _kill(worker)
    gone = watch.gone()
    assert [e.pid for e in gone] == [worker.pid] and gone[0].status is None


def test_running_or_inline_engines_report_nothing():
    running = SimpleNamespace(name="EngineCore_DP0", exitcode=None, pid=1)
    assert endings(_vllm_llm([running]), EngineWatch()) == []
    assert endings(SimpleNamespace(llm_engine=SimpleNamespace()), EngineWatch()) == []
    assert endings(None, EngineWatch()) == []


def _judge(llm, budget: MemoryBudget) -> VllmJudge:
    judge = VllmJudge.__new__(VllmJudge)  # no engine loaded: only its failure is read
    judge._budget, judge._watch, judge.llm = budget, EngineWatch(), llm
    return judge


def test_the_judge_puts_the_cause_in_place_of_see_stack_trace_above():
    dead = Exception(STACK_TRACE)
    alive = SimpleNamespace(name="EngineCore_DP0", exitcode=None, pid=1)
    judge = _judge(_vllm_llm([alive]), MemoryBudget(needed_gib=5.0, free_gib=2.5))
    assert judge.failure() is None
    assert judge._rejected(dead) == f"vLLM rejected the request: {dead}"
    process = _started()
    _kill(process)
    judge.llm = _vllm_llm([process])
    said = judge._rejected(dead)
    assert "stack trace" not in said
    assert said.startswith("the judge's worker was killed, likely out of memory: about 5.0 GB")


def test_a_load_killed_for_memory_says_so(monkeypatch):
    judge = _judge(None, MemoryBudget(needed_gib=9.0, free_gib=4.0))
    judge._watch.oom_kills = 3
    monkeypatch.setattr("grader.judge.engine_death.oom_kills", lambda: 4)
    assert judge._load_failure(Exception(STACK_TRACE)).startswith(
        "the judge's worker was killed, likely out of memory: about 9.0 GB needed, 4.0 GB free"
    )
    judge._watch.oom_kills = 4
    assert judge._load_failure(Exception("no such model")) == "no such model"


@pytest.mark.parametrize(
    ("ended", "kills", "words"),
    [
        ([Ending("EngineCore", -9)], 0, "killed, likely out of memory: about 6.2 GB needed, "
         "3.0 GB free when it started (the kernel's log"),
        ([Ending("VLLM::Worker", None), Ending("EngineCore", 1)], 1,
         "killed, likely out of memory: about 6.2 GB needed, 3.0 GB free when it started "
         "(the kernel's out-of-memory killer ran"),
        ([Ending("EngineCore", 1), Ending("VLLM::Worker", None)], 0,
         "worker process (VLLM::Worker) died unexpectedly"),
        ([Ending("EngineCore", -11)], 0, "died of SIGSEGV"),
        ([Ending("EngineCore", 1)], 0, "stopped with exit status 1; its account is in the log"),
    ],
)  # fmt: skip
def test_death_messages_name_how_the_engine_ended(ended, kills, words):
    assert words in death_message(ended, kills, MemoryBudget(6.24, 3.05))


def test_no_ending_no_message():
    assert death_message([], 2, MemoryBudget()) is None  # another program's kill, not ours


def test_memory_figures_from_the_kernel_and_the_checkpoint(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 24000000 kB\nMemAvailable: 3145728 kB\n")
    assert available_gib(meminfo) == 3.0
    assert available_gib(tmp_path / "absent") is None
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("pgfault 12\noom_kill 7\n")
    assert oom_kills(vmstat) == 7 and oom_kills(tmp_path / "absent") is None
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"\0" * 1024)
    (model / "config.json").write_text(json.dumps({"torch_dtype": "bfloat16"}))
    assert weights_gib(str(model), "float32") == 2 * 1024 / 1024**3  # twice its files
    assert weights_gib(str(model), "bfloat16") == 1024 / 1024**3
    assert weights_gib(str(tmp_path), "float32") is None  # no weights: not known


def test_a_closed_judge_shuts_its_engine_down_once_and_reports_no_failure():
    shutdowns = []
    engine = SimpleNamespace(shutdown=lambda: shutdowns.append(1))
    judge = _judge(SimpleNamespace(llm_engine=engine), MemoryBudget(needed_gib=1.0, free_gib=2.0))
    judge.close()
    judge.close()
    assert shutdowns == [1]
    assert judge.failure() is None
