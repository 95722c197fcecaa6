"""Time each input that used to backtrack (issue 29), at the largest size allowed.

Student text is cut at ``max_answer_chars`` (20,000 by default); a paper has no limit, so its
cases use 50,000 characters, the size the issue timed through the CLI. Each case runs in its own
process with the code under ``--root`` and a time limit, so the code before the fix can be timed
too (a case past the limit is recorded as ``null`` with ``timed_out``):

    python -m benchmarks.text_worst_case                      # this tree: after
    python -m benchmarks.text_worst_case --root /path/to/old --label before --limit 20

Both write (or update) ``benchmarks/results/text_worst_case.json``, one entry per label.
``tests/unit/test_linear_text.py`` asserts the bounded work; this file has the times.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import command

ANSWER = 20_000
PAPER = 50_000
RESULTS = Path(__file__).parent / "results" / "text_worst_case.json"
QUESTION = "一、简答题\\n1.简述梯度下降。\\n"

_INJECTIONS = (
    "from grader.engine.reading.injection import find_injections, strip_injections\n"
    "f = lambda a: strip_injections(a, find_injections(a))"
)
_PAPER = (
    "from grader.bank.paper import parse_paper\n"
    "from grader.errors import BankError\n"
    "def f(t):\n"
    "    try:\n"
    "        parse_paper(t, file='p.txt', slug='p')\n"
    "    except BankError:\n"
    "        pass"
)
# name: (code defining f, expression of the input of about n characters, n, issue item)
CASES: dict[str, tuple[str, str, int, str]] = {
    "choice letters: 'A ' * n + 'z'": (
        "from grader.bank.marks import choice_letters as f",
        "'A ' * (n // 2) + 'z'",
        ANSWER,
        "1",
    ),
    "bank key: 'A ' * n + 'Az'": (
        "from grader.bank.keys import choice_key as f",
        "'A ' * (n // 2) + 'Az'",
        PAPER,
        "1",
    ),
    "verdict fragment: 'C11' * n + 'x'": (
        "from grader.engine.reading.blanks import blank_reason\nf = lambda a: blank_reason(a, 2)",
        "'C11' * (n // 3) + 'x'",
        ANSWER,
        "2",
    ),
    "injection: text, then '[' * n": (_INJECTIONS, "'some text ' + '[' * n", ANSWER, "3"),
    "injection: 'ab' + '\\n' * n": (_INJECTIONS, "'ab' + '\\n' * n", ANSWER, "3"),
    "injection: '<' + ' ' * n + 'x'": (_INJECTIONS, "'<' + ' ' * n + 'x'", ANSWER, "3"),
    "injection: 'give 5' + '/' * n + 'x'": (_INJECTIONS, "'give 5' + '/' * n + 'x'", ANSWER, "3"),
    "injection: '1' * n + 'x'": (_INJECTIONS, "'1' * n + 'x'", ANSWER, "3"),
    "injection: '满分 ' * n (a finding per word)": (_INJECTIONS, "'满分 ' * (n // 3)", ANSWER, "3"),
    "paper: spaces after a question": (_PAPER, f"'{QUESTION}' + ' ' * n + 'x'", PAPER, "4"),
    "paper: newlines after a question": (_PAPER, f"'{QUESTION}' + '\\n' * n + 'x'", PAPER, "4"),
    "paper: spaces after 答案": (_PAPER, f"'{QUESTION}答案' + ' ' * n + 'x'", PAPER, "4"),
    "paper: spaces after 案例": (_PAPER, f"'{QUESTION}案例' + ' ' * n + 'x'", PAPER, "4"),
    "paper: spaces inside （ of a points note": (
        "from grader.bank.points import take_own_points as f",
        "'题（' + ' ' * n + 'x'",
        PAPER,
        "4",
    ),
    "paper: pinyin '(' + 'ā' * n": (
        "from grader.text import clean as f",
        "'(' + 'ā' * n + 'x'",
        PAPER,
        "4",
    ),
}

_RUNNER = """
import json, time
{setup}
n = {n}
text = {expr}
start, cpu = time.perf_counter(), time.process_time()
f(text)
print(json.dumps({{"chars": len(text), "seconds": time.perf_counter() - start,
                  "cpu_seconds": time.process_time() - cpu}}))
"""


def run_case(root: Path, setup: str, expr: str, n: int, limit: float) -> dict:
    code = _RUNNER.format(setup=setup, n=n, expr=expr)
    env = {**os.environ, "PYTHONPATH": str(root)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=limit,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return {"seconds": None, "cpu_seconds": None, "timed_out": True}
    return {**json.loads(done.stdout), "timed_out": False}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--label", default="after")
    parser.add_argument("--limit", type=float, default=60.0, help="seconds per case")
    parser.add_argument("--only", help="run the cases whose name contains this")
    args = parser.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    rows = {}
    for name, (setup, expr, n, item) in CASES.items():
        if args.only and args.only not in name:
            continue
        row = {"issue_item": item, **run_case(args.root, setup, expr, n, args.limit)}
        rows[name] = row
        shown = "timed out" if row["timed_out"] else f"{row['seconds']:.4f} s"
        print(f"{name:48} {shown}", flush=True)
    results[args.label] = {
        "machine": f"{platform.node()}: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}",
        "command": command(),
        "limit_s": args.limit,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cases": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()
