"""The benchmarks' shared library: what more than one entry point reads, and the helpers the
entry points start as processes. Not an entry point itself (``benchmarks/README.md``,
"Layout").

- ``common``: the repository root, the results folder, the code version and command a result
  records, a result written to ``--out`` or the terminal;
- ``splits``: where the public data sets live (``GRADER_DATA_DIR``, ``--data-dir``), their
  readers and development / test splits, fixed before any result was looked at;
- ``datasets``: the data sets as banks, and the scorer's feature table;
- ``readings``: the embedded judge's recorded readings of the data sets' answers;
- ``exams``: the agreement's exams per setting (graded by hand / scored);
- ``replay``: production's grades and review queue replayed on the feature table;
- ``judge_answers``, ``judge_runs``: the answers the judge's speed is measured on, the plans
  and the modes end to end;
- ``timed_worker``, ``deployment``: a timed ``grader worker``, a supervised service on
  127.0.0.1 (the queue benchmark and the fault soak);
- ``dummy_model``: a model folder vLLM loads with random weights (``gpu.sh``).
"""
