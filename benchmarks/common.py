"""What the benchmark scripts share: the code version they record, numbers as they print them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def code_version(*paths: str | Path) -> dict:
    """The commit measured, and whether any of ``paths`` differ from it (an edited checkout)."""

    def git(*args: str | Path) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    try:
        changed = git("status", "--porcelain", "--", *paths)
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(changed)}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}


def command() -> str:
    """This run's command line as a reader reruns it from the repository root, for a result
    file (``python -m benchmarks.<name> ...``; ``sys.argv[0]`` is the module's file path)."""
    script = Path(sys.argv[0]).resolve()
    if script.parent == ROOT / "benchmarks":
        return " ".join([f"python -m benchmarks.{script.stem}", *sys.argv[1:]])
    return " ".join(["python", *sys.argv])


def write_result(result: dict, out: Path | None) -> None:
    """A run's result as indented JSON: to ``out`` when given, else on the terminal."""
    text = json.dumps(result, indent=1, ensure_ascii=False)
    if out:
        out.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)


def fmt(value: object) -> str:
    """A figure for a printed table: floats to 3 decimals, None as a dash."""
    if value is None:
        return "—"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def paired_pearson_difference(
    human: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    questions: np.ndarray,
    resamples: int,
    seed: int = 0,
) -> dict:
    """Pearson(b, human) − Pearson(a, human) on the same answers, with a 95 % interval from a
    paired bootstrap over whole questions (answers of one question share their errors)."""
    names = sorted(set(questions))
    members = [np.flatnonzero(questions == q) for q in names]
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(resamples):
        rows = np.concatenate([members[i] for i in rng.integers(0, len(names), len(names))])
        if np.ptp(human[rows]) and np.ptp(a[rows]) and np.ptp(b[rows]):
            found.append(pearson(b[rows], human[rows]) - pearson(a[rows], human[rows]))
    low, high = np.quantile(found, [0.025, 0.975])
    return {
        "n": len(human),
        "questions": len(names),
        "difference": round(pearson(b, human) - pearson(a, human), 4),
        "interval_95": [round(float(low), 4), round(float(high), 4)],
        "resamples": resamples,
    }


def pearson(u: np.ndarray, v: np.ndarray) -> float:
    """Pearson's r of two equally long arrays."""
    return float(np.corrcoef(u, v)[0, 1])
