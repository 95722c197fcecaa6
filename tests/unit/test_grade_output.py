"""What ``grader grade`` prints, run as a user runs it (a process of its own): grader's own
lines only, a progress display that moves while the judge works, and the libraries' output —
a child process writing to the stderr it inherited included — in the log file unless -v."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, RUBRICS

BANK = RUBRICS / "grad_accum_engineer.yaml"
EXAMPLES = ROOT / "examples" / "grad_accum_engineer.submissions.jsonl"

# Every line grader writes to stderr in a plain-progress run; anything else came from elsewhere.
OWN_LINES = [
    r"library logs: (?P<log>\S+\.log)",
    r"objective answers: \d+/160 answers, [\d:]+(, about [\d:]+ left)?",
    r"starting the scripted judge…",
    r"starting the scripted judge: done in [\d:]+",
    r"judging: (?P<judged>\d+)/24 answers, [\d:]+(, about [\d:]+ left)?",
]

# A stand-in for vLLM and friends: while the judge scores, a child process writes to the
# stdout and stderr it inherited, a library logger warns, and a warning and a print go to
# this process's stderr. Then the scripted judge does its work.
NOISY_JUDGE = """
import logging, subprocess, sys, warnings
from grader.judge import scripted

scored = scripted.ScriptedJudge.score_labels

def noisy(self, requests):
    subprocess.run([sys.executable, "-c", "import os; os.write(2, b'CHILD-STDERR-NOISE\\\\n');"
                    "os.write(1, b'CHILD-STDOUT-NOISE\\\\n')"], check=True)
    logging.getLogger("vllm.engine").warning("LOGGER-NOISE")
    warnings.warn("WARNINGS-NOISE")
    print("PRINT-NOISE", file=sys.stderr)
    return scored(self, requests)

scripted.ScriptedJudge.score_labels = noisy
from grader.cli import main
sys.argv[0] = "grader"
main()
"""
NOISE = [
    "CHILD-STDERR-NOISE",
    "CHILD-STDOUT-NOISE",
    "LOGGER-NOISE",
    "WARNINGS-NOISE",
    "PRINT-NOISE",
]


def _grade(tmp_path: Path, *extra: str, script: str | None = None):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
        "GRADER_CACHE_DIR": str(tmp_path / "cache"),
    }
    env.pop("GRADER_JUDGE_CHUNK", None)  # the command line's own default
    command = ["-c", script] if script else ["-m", "grader"]
    args = ["grade", "--bank", str(BANK), str(EXAMPLES), "--out", str(tmp_path / "g.jsonl")]
    return subprocess.run(
        [sys.executable, *command, *args, *extra],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_grade_prints_its_own_lines_only_and_judging_advances(tmp_path):
    result = _grade(tmp_path, "--progress", "plain")
    assert result.returncode == 0, result.stderr
    judged, logs = [], []
    for line in result.stderr.splitlines():
        match = next((m for p in OWN_LINES if (m := re.fullmatch(p, line))), None)
        assert match is not None, f"a line grader did not write: {line!r}"
        if match.groupdict().get("judged"):
            judged.append(int(match["judged"]))
        if match.groupdict().get("log"):
            logs.append(Path(match["log"]))
    # The display advanced while the judge worked, not once at the end.
    assert len(judged) > 2 and judged == sorted(judged) and judged[-1] == 24
    assert logs == sorted((tmp_path / "cache" / "logs").glob("grade-*.log"))
    # stdout: the summary tables and nothing else.
    assert result.stdout.startswith("per question") and "status: " in result.stdout


@pytest.mark.parametrize("verbose", [False, True])
def test_library_output_goes_to_the_log_file_unless_verbose(tmp_path, verbose):
    result = _grade(tmp_path, *(["-v"] if verbose else []), script=NOISY_JUDGE)
    assert result.returncode == 0, result.stderr
    terminal = result.stdout + result.stderr
    logs = list((tmp_path / "cache" / "logs").glob("*.log"))
    if verbose:
        assert all(noise in terminal for noise in NOISE), terminal
        assert not logs
    else:
        (log,) = logs
        assert f"library logs: {log}" in result.stderr
        assert not [noise for noise in NOISE if noise in terminal], terminal
        kept = log.read_text()
        assert all(noise in kept for noise in NOISE), kept
        # grader's own lines stay on the terminal
        assert "judging: 24/24 answers" in result.stderr and "per question" in result.stdout
