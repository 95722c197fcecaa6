"""A wheel-installed grader grades the example exam outside the repository.

The wheel is built from a copy of the project, installed with ``pip --target`` into a folder
of its own, and run from another working directory with only that folder on the path: the
judge prompts, the templates and the migrations must all come from the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAM = "grad_accum_engineer"

pytestmark = pytest.mark.slow

_NOT_PACKAGED = shutil.ignore_patterns(
    ".git", ".venv", "*.egg-info", "build", "dist", "__pycache__", ".pytest_cache",
    ".ruff_cache", "out", "test-artifacts", "tests", "benchmarks", "examples",
)  # fmt: skip


def _pip(*args: str, cwd: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", *args, "--quiet", "--disable-pip-version-check"],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The folder the wheel was installed into."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=_NOT_PACKAGED)
    # Built in the copy: an in-tree build would leave build/ and egg-info in the repository.
    _pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(work / "dist"), ".", cwd=source)
    (wheel,) = (work / "dist").glob("grader-*.whl")
    site = work / "site"
    _pip("install", "--no-deps", "--target", str(site), str(wheel), cwd=work)
    return site


def test_the_wheel_carries_the_prompts_templates_and_migrations(installed):
    package = installed / "grader"
    prompts = package / "engine" / "judging" / "prompt_templates"
    for prompt in ("judge", "draft"):
        for language in ("zh", "en"):
            for part in ("system.j2", "user.j2"):
                copy = prompts / prompt / language / part
                assert not copy.is_symlink() and copy.is_file(), copy
                assert (
                    copy.read_bytes() == (ROOT / "prompts" / prompt / language / part).read_bytes()
                )
    assert (package / "engine" / "scoring" / "scorer_default.json").is_file()
    assert (package / "engine" / "review" / "review_error.json").is_file()
    assert (package / "templates" / "instructor" / "question.html.j2").is_file()
    assert (package / "service" / "migrations" / "script.py.mako").is_file()
    assert (installed / "workers" / "app.py").is_file()


def test_a_wheel_installed_grader_grades_the_example_exam_elsewhere(installed, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "rubrics").mkdir(parents=True)
    shutil.copy(ROOT / "rubrics" / f"{EXAM}.yaml", elsewhere / "rubrics")
    shutil.copytree(ROOT / "rubrics" / EXAM, elsewhere / "rubrics" / EXAM)
    shutil.copy(ROOT / "examples" / f"{EXAM}.submissions.jsonl", elsewhere / "answers.jsonl")
    # The command, in a process that also says where the grader it runs was imported from.
    run = textwrap.dedent(
        """
        import sys
        import grader, grader.engine.judging.prompts
        print(grader.__file__, grader.engine.judging.prompts.PROMPTS_DIR, sep="\\n", file=sys.stderr)
        from grader.cli import main
        sys.argv = ["grader", *sys.argv[1:]]
        main()
        """
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GRADER_")},
        "PYTHONPATH": str(installed),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
        "GRADER_CACHE_DIR": str(tmp_path / "cache"),
    }
    result = subprocess.run(
        [sys.executable, "-c", run, "grade", "--bank", f"rubrics/{EXAM}.yaml", "answers.jsonl",
         "--out", "grades.jsonl"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    module, prompts = result.stderr.splitlines()[:2]
    assert Path(module).is_relative_to(installed), module
    assert Path(prompts).is_relative_to(installed) and not Path(prompts).is_relative_to(ROOT)
    grades = [json.loads(line) for line in (elsewhere / "grades.jsonl").read_text().splitlines()]
    assert len(grades) == 184
    judged = [g for g in grades if g["method"] == "judge"]
    assert judged and all(g["status"] == "graded" for g in judged)
    assert {g["provenance"]["backend"] for g in judged} == {"scripted"}
    assert all(g["provenance"]["prompt_version"] for g in judged)
    # ``grader explain`` reads the example's grades back: the criteria, then the trail
    explained = subprocess.run(
        [sys.executable, "-c", run, "explain", "grades.jsonl", judged[0]["submission_id"]],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert explained.returncode == 0, explained.stderr[-3000:]
    assert "How the score was decided:" in explained.stdout
    assert f"→ {judged[0]['score']:g}" in explained.stdout
