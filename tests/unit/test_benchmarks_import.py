"""Every benchmark module imports against the current code.

The benchmarks run by hand, so a rename in ``grader`` that a benchmark still uses breaks it
silently until someone reruns it: ``review_queue`` imported a constant a merge had renamed
(``NO_GRADED`` → ``GradedSetting.NONE``) and could not start. Importing each module catches
that class of break without running any benchmark.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# Modules that read their configuration at import, as the process they run in.
RUN_ONLY = {"lib.timed_worker"}  # GRADER_BENCH_TIMINGS names its output file
MODULES = sorted(
    ".".join(p.relative_to(BENCHMARKS).with_suffix("").parts)
    for p in BENCHMARKS.rglob("*.py")
    if p.stem != "__init__"
)
MODULES = [m for m in MODULES if m not in RUN_ONLY]


def test_the_benchmark_modules_are_found() -> None:
    assert {"review_queue", "seed_kinds", "lib.replay", "hostile_soak"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_a_benchmark_imports(module: str) -> None:
    importlib.import_module(f"benchmarks.{module}")
