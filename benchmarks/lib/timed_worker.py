"""``grader worker`` with its grading steps timed, for ``queue_throughput.py`` (started as ``python -m benchmarks.lib.timed_worker``).

Wraps, in the main process before Celery forks its pool (so every pool process inherits the
wrappers): loading the graders (``Graders.load``: banks, judge engine), the task's step
(``grade_stored``: store reads, pipeline, store writes), ``Pipeline.grade_many``, its embedding
signals (``Pipeline._analyze``) and its judge call (``grader.engine.judging.asking.ask``: every model
call of a batch, re-asks included). Each call appends one JSON line (pid, step, start, end, items) to the
file named by ``GRADER_BENCH_TIMINGS``. The service's own code is unchanged.

    GRADER_BENCH_TIMINGS=t.jsonl python -m benchmarks.lib.timed_worker worker --concurrency 2
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable

import grader.engine.judging.asking
import grader.service.batches
from grader.cli import main
from grader.engine.pipeline import Pipeline
from grader.service.exams import Graders

TIMINGS = os.environ["GRADER_BENCH_TIMINGS"]


def _timed(step: str, fn: Callable, items: Callable[[tuple], int] = lambda _: 0) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.time()
        try:
            return fn(*args, **kwargs)
        finally:
            line = {"pid": os.getpid(), "step": step, "start": start, "end": time.time()}
            line["items"] = items(args)
            with open(TIMINGS, "a") as f:  # one short append per call: lines do not interleave
                f.write(json.dumps(line) + "\n")

    return wrapper


Graders.load = classmethod(_timed("load", Graders.load.__func__))
# workers.tasks imports grade_stored by name when Celery loads it, after this line
grader.service.batches.grade_stored = _timed(
    "task", grader.service.batches.grade_stored, lambda a: len(a[2])
)
Pipeline.grade_many = _timed("grade_many", Pipeline.grade_many, lambda a: len(a[1]))
Pipeline._analyze = _timed("signals", Pipeline._analyze, lambda a: len(a[1]))
# the engine calls the judge as grader.engine.judging.asking.ask (a module attribute), so this reaches it
grader.engine.judging.asking.ask = _timed(
    "judge", grader.engine.judging.asking.ask, lambda a: len(a[1])
)

if __name__ == "__main__":
    main()
