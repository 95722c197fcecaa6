"""What every benchmark records about the code it measured."""

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
