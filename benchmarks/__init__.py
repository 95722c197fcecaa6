"""The benchmarks: how good the grades are, how fast, on what (``benchmarks/README.md``).

Each top-level module is one maintained entry point, run from the repository root as
``python -m benchmarks.<name>`` (``--help`` names its options; importing one loads no model).
They share the library in ``benchmarks.lib`` by absolute imports instead of patching
``sys.path``. Not part of the installed wheel.
"""
