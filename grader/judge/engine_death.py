"""Why an embedded engine stopped answering, in words a user can act on.

vLLM runs its engine core in a child process. When the kernel kills it for memory, vLLM's own
error says only "EngineCore encountered an issue. See stack trace (above) for the root cause",
and there is no stack trace: the cause is in the kernel's log. What the parent can still see
is the child's exit status (killed by SIGKILL: -9) and what the machine had before loading,
so the judge names those instead: "the judge's worker was killed, likely out of memory: about
N GB needed, M GB free". vLLM's worker (the process with the weights and the cache, the one
the kernel picks) is not this process's child, so its end is seen as its disappearance, and
the kernel's count of out-of-memory kills (``/proc/vmstat``) tells a kill for memory apart.
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


def memory_budget(model_path: str, dtype: str, kv_cache_gib: float, cuda: bool) -> MemoryBudget:
    """Memory free before loading and, on CPU, what the engine takes of it (the weights in
    the engine's dtype and the KV cache), for the line that names a kill for memory."""
    weights = None if cuda else weights_gib(model_path, dtype)
    needed = weights + kv_cache_gib if weights else None
    return MemoryBudget(needed_gib=needed, free_gib=available_gib())


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


@dataclass(frozen=True)
class Ending:
    """An engine process that is no longer running: its exit status where this process is its
    parent (negative: killed by that signal), None where it is not (vLLM's own worker)."""

    name: str
    status: int | None
    pid: int = 0


def oom_kills(vmstat: Path = Path("/proc/vmstat")) -> int | None:
    """How many processes the kernel's out-of-memory killer has killed since boot (cgroup
    limits included); None where the kernel does not say."""
    try:
        for line in vmstat.read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


class EngineWatch:
    """What to compare with once the engine fails: the out-of-memory kills so far (taken
    before loading) and the engine's processes once loaded (vLLM's engine core is this
    process's child; its worker, holding the weights and the cache, is a grandchild)."""

    def __init__(self) -> None:
        self.oom_kills = oom_kills()
        self.processes: dict[int, tuple[str, float]] = {}
        self._before = {pid for pid, _ in _descendants()}  # not the engine's

    def loaded(self) -> None:
        """Note the engine's processes, now that they run: those started while it loaded."""
        self.processes = {pid: about for pid, about in _descendants() if pid not in self._before}

    def oom_kills_since(self) -> int:
        now = oom_kills()
        return max(0, now - self.oom_kills) if now is not None and self.oom_kills is not None else 0

    def gone(self) -> list[Ending]:
        """The noted processes that no longer run (a zombie counts), exit status unknown."""
        try:
            import psutil
        except ImportError:
            return []
        ended = []
        for pid, (name, started) in self.processes.items():
            try:
                process = psutil.Process(pid)
                running = (
                    process.create_time() == started and process.status() != psutil.STATUS_ZOMBIE
                )
            except psutil.Error:
                running = False
            if not running:
                ended.append(Ending(name, None, pid))
        return ended


def _descendants() -> list[tuple[int, tuple[str, float]]]:
    """This process's descendants: pid, and name and start time (a pid can be reused)."""
    try:
        import psutil
    except ImportError:  # vLLM depends on it; without it only direct children are seen
        return []
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            found.append((child.pid, (child.name(), child.create_time())))
        except psutil.Error:
            continue
    return found


def exited_processes(llm: object) -> list[Ending]:
    """The engine processes of a ``vllm.LLM`` (its children) that have ended, with their exit
    status; none when the engine runs in this process (then nothing is left to ask)."""
    processes: Iterable = getattr(_engine_manager(llm), "processes", None) or ()
    ended = []
    for process in processes:
        code = getattr(process, "exitcode", None)
        if code is not None and code != 0:
            name = str(getattr(process, "name", "engine"))
            ended.append(Ending(name, int(code), getattr(process, "pid", 0) or 0))
    return ended


def endings(llm: object, watch: EngineWatch) -> list[Ending]:
    """Every engine process that has ended: with its status where vLLM's process object has
    it, else (vLLM's worker, a grandchild) without."""
    known = exited_processes(llm)
    pids = {e.pid for e in known}
    return known + [e for e in watch.gone() if e.pid not in pids]


def _engine_manager(llm: object) -> object | None:
    """vLLM's manager of its engine processes (``LLM.llm_engine.engine_core.resources``)."""
    engine_core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    return getattr(getattr(engine_core, "resources", None), "engine_manager", None)


def death_message(
    endings: list[Ending], oom_kills: int, budget: MemoryBudget, *, loading: bool = False
) -> str | None:
    """One line naming how the engine ended, or None while it runs. A process killed with
    SIGKILL, or any ended while the out-of-memory killer ran (or, ``loading``, a load that
    failed while it ran), was killed for memory; the worker's end comes before its engine
    core's (which exits 1 when its worker dies)."""
    if not endings and not (loading and oom_kills):
        return None
    if oom_kills or any(e.status == -signal.SIGKILL for e in endings):
        return _killed(oom_kills, budget)
    unknown = [e for e in endings if e.status is None]
    if unknown:
        return (
            f"the judge's worker process ({unknown[0].name}) died unexpectedly; "
            "vLLM's account, if any, is in the log"
        )
    status = endings[0].status or 0
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"the judge's worker died of {name}"
    return f"the judge's worker stopped with exit status {status}; its account is in the log"


def _killed(oom_kills: int, budget: MemoryBudget) -> str:
    line = "the judge's worker was killed, likely out of memory"
    facts = []
    if budget.needed_gib is not None:
        facts.append(f"about {budget.needed_gib:.1f} GB needed")
    if budget.free_gib is not None:
        facts.append(f"{budget.free_gib:.1f} GB free when it started")
    if facts:
        line += ": " + ", ".join(facts)
    if oom_kills:
        return line + " (the kernel's out-of-memory killer ran; `dmesg` names what it killed)"
    return line + " (the kernel's log, `dmesg`, names what it killed)"
