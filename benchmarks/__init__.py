"""The benchmarks: scripts that measure the grader on public and seed data, run from the
repository root as ``python -m benchmarks.<name>`` (``benchmarks/README.md`` has the figures).

A package so its scripts share one small library by absolute imports (``benchmarks.common``:
code version, results folder, metrics with intervals; ``benchmarks.splits``: the data sets and
their fixed splits; ``benchmarks.datasets``: the data sets as banks) instead of patching
``sys.path``. Not part of the installed wheel.
"""
