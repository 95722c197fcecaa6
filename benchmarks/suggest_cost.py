"""What choosing the answers to grade first costs per question (``engine.review.suggest.choose``).

``grader suggest`` and the pages' "grade these first" choose over the cosines of the
answers' own unit vectors, which form a kernel as they are: ``choose`` makes k passes over
the n×n matrix. Before session 14 every call first projected the cosines onto the nearest
positive semi-definite matrix (``as_kernel``, an n³ eigendecomposition), which only cosines
read from a table need. Both are timed side by side in one run, on synthetic 384-dimensional
unit vectors (the e5 width; clustered around one direction, as answers to one question are),
k = 10; the picks of the two are compared too. Ratios are what to quote; absolute times are
this machine's.

    python -m benchmarks.suggest_cost --out benchmarks/results/suggest_cost.json
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

from benchmarks.common import code_version, command, write_result
from grader.engine.review.suggest import as_kernel, choose

SIZES = (100, 500, 1000, 2000, 4000)


def answers(n: int, seed: int = 0) -> np.ndarray:
    """n unit vectors, float32 as the embedder returns them, around one shared direction."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, 384))
    v = v / np.linalg.norm(v, axis=1, keepdims=True) + 0.3
    unit: np.ndarray = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return unit


def best_of(runs: int, work) -> tuple[float, list[int]]:
    times, picked = [], []
    for _ in range(runs):
        start = time.perf_counter()
        picked = work()
        times.append(time.perf_counter() - start)
    return min(times), picked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3, help="the best of this many runs")
    args = parser.parse_args()
    rows = []
    for n in SIZES:
        vectors = answers(n)
        kernel = vectors @ vectors.T
        direct, a = best_of(args.runs, lambda kernel=kernel: choose(kernel, args.k))
        projected, b = best_of(args.runs, lambda kernel=kernel: choose(as_kernel(kernel), args.k))
        rows.append({"answers": n, "choose_s": round(direct, 4),
                     "as_kernel_then_choose_s": round(projected, 4),
                     "ratio": round(projected / direct, 1), "same_picks": a == b})  # fmt: skip
        print(rows[-1], flush=True)
    write_result(
        {
            "benchmark": "suggest_cost",
            "command": command(),
            "code": code_version("grader", "benchmarks/*.py"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
            "k": args.k,
            "rows": rows,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
