"""What the benchmark scripts share: the code version they record, numbers as they print them."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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


def fmt(value: object) -> str:
    """A figure for a printed table: floats to 3 decimals, None as a dash."""
    if value is None:
        return "—"
    return f"{value:.3f}" if isinstance(value, float) else str(value)
