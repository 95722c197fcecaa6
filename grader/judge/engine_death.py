"""Why an embedded engine stopped answering, in words a user can act on.

vLLM runs its engine core in a child process. When the kernel kills it for memory, vLLM's own
error says only "EngineCore encountered an issue. See stack trace (above) for the root cause",
and there is no stack trace: the cause is in the kernel's log. What the parent can still see
is the child's exit status (killed by SIGKILL: -9) and what the machine had before loading,
so the judge names those instead: "the judge's worker was killed, likely out of memory: about
N GB needed, M GB free".
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_GIB = 1024**3
_BYTES_PER_VALUE = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2}


@dataclass(frozen=True)
class MemoryBudget:
    """What the engine was expected to take and what the machine had free before it loaded;
    None where not known (a GPU's weights are not in this machine's memory)."""

    needed_gib: float | None = None
    free_gib: float | None = None


def available_gib(meminfo: Path = Path("/proc/meminfo")) -> float | None:
    """The kernel's estimate of memory available to a new process (``MemAvailable``)."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 / _GIB
    except (OSError, ValueError, IndexError):
        return None
    return None


def weights_gib(model_path: str, dtype: str) -> float | None:
    """The weights' size once loaded in ``dtype``: their size on disk, scaled from the
    checkpoint's own dtype (a bfloat16 checkpoint run in float32 takes twice its files)."""
    folder = Path(model_path)
    files = [*folder.glob("*.safetensors"), *folder.glob("*.bin")]
    if not files:
        return None
    size = sum(f.stat().st_size for f in files)
    try:
        stored = json.loads((folder / "config.json").read_text()).get("torch_dtype")
    except (OSError, ValueError, AttributeError):
        stored = None
    scale = _BYTES_PER_VALUE.get(dtype, 2) / _BYTES_PER_VALUE.get(stored or "", 2)
    return size * scale / _GIB


def exited_process(llm: object) -> tuple[str, int] | None:
    """(name, exit status) of an engine process of a ``vllm.LLM`` that has ended, or None
    while all run (or when the engine runs in this process: then nothing is left to ask)."""
    processes: Iterable = getattr(_engine_manager(llm), "processes", None) or ()
    for process in processes:
        code = getattr(process, "exitcode", None)
        if code is not None and code != 0:
            return str(getattr(process, "name", "engine")), int(code)
    return None


def _engine_manager(llm: object) -> object | None:
    """vLLM's manager of its engine processes (``LLM.llm_engine.engine_core.resources``)."""
    engine_core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    return getattr(getattr(engine_core, "resources", None), "engine_manager", None)


def death_message(exit_status: int, budget: MemoryBudget) -> str:
    """One line naming how the engine process ended and, for a kill, the likely cause."""
    if exit_status == -signal.SIGKILL:
        line = "the judge's worker was killed, likely out of memory"
        facts = []
        if budget.needed_gib is not None:
            facts.append(f"about {budget.needed_gib:.1f} GB needed")
        if budget.free_gib is not None:
            facts.append(f"{budget.free_gib:.1f} GB free when it started")
        if facts:
            line += ": " + ", ".join(facts)
        return line + " (the kernel's log, `dmesg`, names what it killed)"
    if exit_status < 0:
        try:
            name = signal.Signals(-exit_status).name
        except ValueError:
            name = f"signal {-exit_status}"
        return f"the judge's worker died of {name}"
    return f"the judge's worker stopped with exit status {exit_status}; its account is in the log"
