"""What every entry point shares: where results go, and what a result records (the code
version measured and the command that reran it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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
    if script.parent in (ROOT / "benchmarks", ROOT / "benchmarks" / "lib"):
        module = ".".join(script.relative_to(ROOT).with_suffix("").parts)
        return " ".join([f"python -m {module}", *sys.argv[1:]])
    return " ".join(["python", *sys.argv])


def write_result(result: dict, out: Path | None) -> None:
    """A run's result as indented JSON: to ``out`` when given, else on the terminal."""
    text = json.dumps(result, indent=1, ensure_ascii=False)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {out}")
    else:
        print(text)
