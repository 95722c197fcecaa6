"""Every command the README and the docs name runs: a stale command fails here, not for a reader.

The commands are read from README.md, docs/**/*.md and benchmarks/README.md: inline code and
fenced blocks (a line ending in ``\\`` goes on). ``grader ...`` names a command path (the
words that are subcommands); each path's ``--help`` runs in-process through typer's runner.
``python -m benchmarks.<name> ...`` runs ``--help`` of each named module in one subprocess
(which also checks that importing it loads neither torch nor vLLM), and a command written
with no placeholder (no ``[``, ``|``, ``<``, ``…``) is parsed, every option as written, by the
module's own ``parser()``: an unknown option or a missing required one fails. Nothing is run.

docs/research/ is left out on purpose: it records what ran at a named commit, commands
included (docs/research/explorations.md), and the code of its studies is in that history.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import typer.main
from typer.testing import CliRunner

from grader.cli import app
from tests.conftest import ROOT

SOURCES = sorted(
    [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").rglob("*.md")]
)
HISTORY = ROOT / "docs" / "research"
PLACEHOLDER = re.compile(r"[\[\]|<>…]|\.\.\.")
# "grader" (or "python -m grader") as a command: at the start or after a shell separator
GRADER = re.compile(r"(?:^|[\s;&|(])(?:python3? -m )?grader[ \t]+([^\n`;&|)]*)")
# a module at most two levels below benchmarks/ (benchmarks.lib.x): no nested quantifier
BENCHMARK = re.compile(r"python3? -m (benchmarks\.\w+(?:\.\w+)?)([^\n`;&|)]*)")


def code_of(markdown: str) -> list[str]:
    """The code in a markdown text: each fenced block's logical lines, each inline span."""
    found, rest = [], []
    fenced = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
    for block in fenced.finditer(markdown):
        found += [" ".join(x.split()) for x in block.group(1).replace("\\\n", " ").splitlines()]
    rest = fenced.sub("", markdown)
    found += [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", rest)]
    return found


def documented(sources: list[Path]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """({grader command text: files}, {benchmark command text: files}) in ``sources``."""
    grader: dict[str, set[str]] = {}
    benchmarks: dict[str, set[str]] = {}
    for path in sources:
        if HISTORY in path.parents:
            continue
        where = str(path.relative_to(ROOT)) if ROOT in path.parents else path.name
        for line in code_of(path.read_text(encoding="utf-8")):
            for m in GRADER.finditer(line):
                grader.setdefault(m.group(1).strip(), set()).add(where)
            for m in BENCHMARK.finditer(line):
                text = f"{m.group(1)}{m.group(2)}".strip()
                benchmarks.setdefault(text, set()).add(where)
    return grader, benchmarks


def command_path(words: str, root: Any) -> list[str]:
    """The subcommand words at the start of ``words`` (``calibrate promote ID`` -> both);
    ``root`` is the app's command group (typer's, which keeps its subcommands in
    ``commands``)."""
    path, command = [], root
    for word in words.split():
        found = getattr(command, "commands", {}).get(word)
        if found is None:
            break
        path.append(word)
        command = found
    return path


def test_the_docs_name_the_commands_they_teach():
    grader, benchmarks = documented(SOURCES)
    root = typer.main.get_command(app)
    paths = {" ".join(command_path(w, root)) for w in grader}
    assert {"grade", "suggest", "calibrate", "calibrate fit", "serve", "worker"} <= paths
    modules = {text.split()[0] for text in benchmarks}
    assert {"benchmarks.agreement", "benchmarks.judge_throughput", "benchmarks.review_queue",
            "benchmarks.fault_soak", "benchmarks.hostile_soak"} <= modules  # fmt: skip


def test_every_documented_grader_command_exists_and_answers_help():
    grader, _ = documented(SOURCES)
    root = typer.main.get_command(app)
    unknown = {
        w: sorted(f)
        for w, f in grader.items()
        if not command_path(w, root) and not w.startswith("-")  # "grader --help": the root
    }
    assert unknown == {}, "documented 'grader' commands that do not exist"
    runner = CliRunner()
    failed = {}
    for path in sorted({" ".join(command_path(w, root)) for w in grader}):
        result = runner.invoke(app, [*path.split(), "--help"])
        if result.exit_code != 0:
            failed[path] = result.output[-300:]
    assert failed == {}


def test_every_documented_benchmark_answers_help_and_parses_as_written():
    _, benchmarks = documented(SOURCES)
    modules = sorted({text.split()[0] for text in benchmarks})
    written = sorted(t for t in benchmarks if not PLACEHOLDER.search(t))
    report = check_benchmarks(modules, written)
    assert report["help"] == {m: 0 for m in modules}, report["help"]
    assert report["heavy"] == {}, "importing these loads a model library"
    assert report["parse"] == {t: 0 for t in written}, report["parse"]


def check_benchmarks(modules: list[str], written: list[str]) -> dict:
    """In one fresh interpreter: each module's ``--help`` exit status and the model libraries
    its import pulled in, and each command's parse status (0: parsed)."""
    script = textwrap.dedent(
        """
        import contextlib, importlib, io, json, runpy, shlex, sys
        modules, written = json.loads(sys.argv[1]), json.loads(sys.argv[2])
        report = {"help": {}, "heavy": {}, "parse": {}}
        for name in modules:
            before = set(sys.modules)
            sys.argv = [name, "--help"]
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    runpy.run_module(name, run_name="__main__", alter_sys=True)
                    report["help"][name] = "no exit"
                except SystemExit as done:
                    report["help"][name] = done.code or 0
                except BaseException as error:
                    report["help"][name] = repr(error)[:300]
            heavy = sorted({"torch", "vllm"} & (set(sys.modules) - before))
            if heavy:
                report["heavy"][name] = heavy
        for text in written:
            name, *argv = shlex.split(text)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                try:
                    importlib.import_module(name).parser().parse_args(argv)
                    report["parse"][text] = 0
                except SystemExit as done:
                    report["parse"][text] = f"exit {done.code}: {err.getvalue()[-300:]}"
                except BaseException as error:
                    report["parse"][text] = repr(error)[:300]
        print(json.dumps(report))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(modules), json.dumps(written)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the reader itself -----------------------------------------------------------------------


def test_the_reader_finds_commands_in_spans_blocks_and_continued_lines(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        textwrap.dedent(
            """
            Run `grader calibrate promote S1 --bank B` or `python -m benchmarks.agreement
            --out x.json`; `import grader` is code, `grader.client` a module.

            ```sh
            pip install -e . && grader grade a.jsonl --bank b.yaml \\
                --out c.jsonl
            python -m benchmarks.review_queue --seeds [--held-out]
            ```
            """
        ),
        encoding="utf-8",
    )
    grader, benchmarks = documented([page])
    assert set(grader) == {
        "calibrate promote S1 --bank B",
        "grade a.jsonl --bank b.yaml --out c.jsonl",
    }
    assert set(benchmarks) == {
        "benchmarks.agreement --out x.json",
        "benchmarks.review_queue --seeds [--held-out]",
    }
    root = typer.main.get_command(app)
    assert command_path("calibrate promote S1 --bank B", root) == ["calibrate", "promote"]
    assert command_path("gradee x", root) == []
    assert PLACEHOLDER.search("benchmarks.review_queue --seeds [--held-out]")
    assert not PLACEHOLDER.search("benchmarks.agreement --out x.json")


def test_a_stale_option_fails_the_parse_and_a_current_one_passes():
    stale, current = "benchmarks.agreement --no-such-option", "benchmarks.agreement --no-judge"
    report = check_benchmarks([], [stale, current])
    assert report["parse"][current] == 0
    assert "unrecognized arguments: --no-such-option" in report["parse"][stale]
