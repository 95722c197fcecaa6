"""The house keeps its floors: imports go one way, no module imports itself back, no module
grows past ~400 lines, ``import grader`` stays light, and the scorer's rules live in one place.

The floors, bottom up (see README "Layout"): ground (version, models, errors, config, text) ←
files, bank, packaged ← judge, embed ← engine ← calibrate, reports ← service ← api, workers ←
cli; beside them ``grader/__init__`` (the "public" room), the library's API, which names
the engine's entry points and loads them on first use.
``ALLOWED`` says, for each room (a top-level module or package of ``grader``, or ``workers``),
which other rooms it may import; imports inside one room are free. A new room must be added
here, on purpose. Inside the engine, ``STAGES`` keeps the order an answer goes through:
reading ← signals ← judging ← scoring ← finish ← review ← record, each stage a package that imports only
earlier ones; the engine's root holds only the pipeline, which composes them, and the package.

The scorer core (``grader/engine/scorer_core``, docs/layout.md) is the one place the
scorer's rules live: the neighbour rule (``graded_split``), the copy rule and the decision
(``decide``); the default fit and an instructor's refit split folds in one function
(``scorer_cv.question_split``) and fit every model in one (``scorer_fit.fit_model``).
Grading, re-scoring, both fits and the benchmarks call them; ``test_the_scorer_rules_live_in
_one_place`` fails when one is written again.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("grader", "workers")
MAX_LINES = 400
# Over the limit for now, and why; an entry that is no longer needed fails the test too.
LONG_FOR_NOW: dict[str, str] = {}

GROUND = {"version", "models", "errors", "config", "text"}
_MODELS = GROUND | {"files", "bank", "packaged"}
_BACKENDS = _MODELS | {"judge", "embed"}
_ENGINE = _BACKENDS | {"engine"}
_ANALYSIS = _ENGINE | {"calibrate", "reports"}
_SERVICE = _ANALYSIS | {"service"}
ALLOWED: dict[str, set[str]] = {
    "version": set(),  # grader/version.py: the release, nothing else
    "public": _ENGINE,  # grader/__init__.py: the library's API, loaded lazily
    "models": set(),
    "errors": set(),
    "text": set(),
    "config": {"models"},
    "files": GROUND,
    "bank": GROUND | {"files"},
    "packaged": GROUND,
    "judge": GROUND | {"packaged"},
    "embed": GROUND | {"packaged"},
    "engine": _BACKENDS,
    "calibrate": _ENGINE,
    "reports": _ENGINE | {"calibrate"},
    "service": _ANALYSIS,
    "client": {"models", "errors"},  # the platforms' client: HTTP, models, the error tree
    "api": _SERVICE,
    "workers": _SERVICE,
    "cli": _SERVICE | {"api", "workers"},
    "__main__": {"cli"},
}


# The engine's stages, in the order an answer goes through them: a stage imports only
# earlier ones; the engine's root holds the pipeline, which composes them, and the package.
STAGES = ("reading", "signals", "judging", "scoring", "finish", "review", "record")
ENGINE_ROOT = {"__init__.py", "pipeline.py"}


def room(module: str) -> str:
    """``grader.engine.pipeline`` -> ``engine``; ``grader`` -> ``public``; ``workers.x`` -> ``workers``."""
    parts = module.split(".")
    if parts[0] == "workers":
        return "workers"
    return parts[1] if len(parts) > 1 else "public"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(module: str, source: str, is_package: bool = False) -> set[str]:
    """Every module of ours that ``source`` imports, at module level or inside functions and
    ``TYPE_CHECKING`` blocks alike (a type-only import is still a dependency)."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from grader.engine.judging import asking``: the module grader.engine.judging.asking;
            # an attribute (``from grader.models import Grade``) resolves to its module below
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(n for n in names if n.split(".")[0] in PACKAGES)
    return found


def resolve(name: str, modules: Iterable[str]) -> str | None:
    """The longest known module that ``name`` is or lies in (``pkg.mod.attr`` -> ``pkg.mod``)."""
    known = set(modules)
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def graph(sources: Mapping[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (itself excluded)."""
    edges = {}
    for module, (source, is_package) in sources.items():
        targets = {resolve(n, sources) for n in imports(module, source, is_package)}
        edges[module] = {t for t in targets if t and t != module}
    return edges


def wrong_way(edges: Mapping[str, set[str]]) -> list[str]:
    """Imports against the floors, as readable lines; a module in no known room is one too."""
    problems = []
    for module, targets in sorted(edges.items()):
        mine = room(module)
        if mine not in ALLOWED:
            problems.append(f"{module}: room {mine!r} is not in ALLOWED; add it on purpose")
            continue
        for target in sorted(targets):
            theirs = room(target)
            if theirs != mine and theirs not in ALLOWED[mine]:
                problems.append(f"{module} ({mine}) imports {target} ({theirs})")
    return problems


def stage(module: str) -> str | None:
    """``grader.engine.scoring.scorer_core.rules`` -> ``scoring``; None outside the engine's
    stages (the pipeline, the package, any other room)."""
    parts = module.split(".")
    if parts[:2] != ["grader", "engine"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in STAGES else None


def stages_out_of_order(edges: Mapping[str, set[str]]) -> list[str]:
    """Engine imports against the stage order, as readable lines: a stage importing a later
    stage or the pipeline, and an engine module in no stage but the pipeline."""
    problems = []
    for module, targets in sorted(edges.items()):
        if module.split(".")[:2] != ["grader", "engine"]:
            continue
        mine = stage(module)
        if mine is None:
            if module not in {"grader.engine", "grader.engine.pipeline"}:
                problems.append(f"{module}: in no stage of {STAGES}")
            continue
        for target in sorted(t for t in targets if t.split(".")[:2] == ["grader", "engine"]):
            theirs = stage(target)
            if theirs is None or STAGES.index(theirs) > STAGES.index(mine):
                problems.append(f"{module} ({mine}) imports {target} ({theirs or 'the root'})")
    return problems


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan): modules that import each
    other, directly or round a loop, however lazily."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def our_sources() -> dict[str, tuple[str, bool]]:
    sources = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            sources[module_name(path)] = (
                path.read_text(encoding="utf-8"),
                path.name == "__init__.py",
            )
    return sources


# --- the checks over this codebase ----------------------------------------------------------


def test_imports_go_one_way():
    assert wrong_way(graph(our_sources())) == []


def test_no_import_cycles():
    assert cycles(graph(our_sources())) == []


def test_the_engine_stages_import_only_earlier_stages():
    assert stages_out_of_order(graph(our_sources())) == []


def test_the_engine_root_holds_only_the_pipeline_and_the_package():
    engine = ROOT / "grader" / "engine"
    stray = sorted(
        p.name
        for p in engine.iterdir()
        if p.name not in ENGINE_ROOT | set(STAGES) and p.name != "__pycache__"
    )
    assert stray == [], "move them into a stage package"
    for name in STAGES:
        package = engine / name / "__init__.py"
        assert package.is_file() and ast.get_docstring(ast.parse(package.read_text())), name


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_over_400_lines(package):
    lengths = {
        str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
        for p in (ROOT / package).rglob("*.py")
    }
    long = {path: n for path, n in lengths.items() if n > MAX_LINES and path not in LONG_FOR_NOW}
    assert long == {}, f"split these by job: {long}"
    stale = [p for p in LONG_FOR_NOW if p in lengths and lengths[p] <= MAX_LINES]
    assert stale == [], f"short enough now: remove them from LONG_FOR_NOW: {stale}"


def test_the_layout_page_names_every_module():
    """docs/layout.md is the map a newcomer reads: a module missing from it is a room unseen."""
    import re

    page = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    layout = re.sub(r"```.*?```", "", page, flags=re.DOTALL)
    named = set(re.findall(r"`([^`]+)`", layout))
    words = {w for n in named for w in re.split(r"[/ ]", n)}
    missing = [
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.name != "__init__.py"
        and "migrations" not in path.parts
        and path.name not in words
        and path.stem not in words
    ]
    assert missing == [], f"add them to docs/layout.md with their job: {missing}"


MAX_FUNCTION_LINES = 80
MAX_INIT_PARAMETERS = 8
# Alembic revisions are history: generated once, never edited.
_FROZEN = ("grader/service/migrations/versions/",)


def _functions(package: str):
    for path in sorted((ROOT / package).rglob("*.py")):
        where = str(path.relative_to(ROOT))
        if where.startswith(_FROZEN):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield f"{where}:{node.lineno} {node.name}", node


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_over_80_lines(package):
    long = {
        name: node.end_lineno - node.lineno + 1
        for name, node in _functions(package)
        if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    }
    assert long == {}, f"split these: {long}"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_constructor_with_more_than_8_parameters(package):
    wide = {}
    for name, node in _functions(package):
        if node.name == "__init__":
            args = node.args
            count = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs) - 1  # self
            if count > MAX_INIT_PARAMETERS:
                wide[name] = count
    assert wide == {}, f"group these parameters into a value: {wide}"


def test_no_comment_cites_an_issue_number():
    """A reader of the repository cannot look an issue up: a comment says the reason instead."""
    import re

    citation = re.compile(r"\bissues?\s*#?" + r"[0-9]+", re.IGNORECASE)
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in (*PACKAGES, "tests")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if citation.search(line)
    ]
    assert found == [], "say the reason, not the issue"


def test_importing_grader_loads_no_model_runtime():
    """``import grader`` and the modules every command and worker loads stay free of torch,
    vLLM and sentence-transformers: those load when a model is actually used."""
    code = textwrap.dedent(
        """
        import sys
        import grader, grader.cli, grader.engine.pipeline, grader.judge, grader.embed
        import grader.packaged, grader.service.exams, grader.calibrate.promote
        heavy = sorted(m for m in ("torch", "vllm", "sentence_transformers", "transformers")
                       if m in sys.modules)
        print(",".join(heavy))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == ""


def test_importing_the_workers_builds_no_celery_app():
    code = textwrap.dedent(
        """
        import workers.app, workers.tasks, workers.lifecycle, workers.sweeper, workers.dispatch
        from celery import _state
        print(len(list(_state._apps)))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == "0"


# The scorer's rules and where each is defined; the names they had when written several times.
SCORER_RULES = {
    "graded_split": "grader/engine/scoring/scorer_core/rules.py",  # the neighbour rule
    "copy_share": "grader/engine/scoring/scorer_core/rules.py",
    "copied_share": "grader/engine/scoring/scorer_core/rules.py",  # the copy rule
    "decide": "grader/engine/scoring/scorer_core/rules.py",
    "readable": "grader/engine/scoring/scorer_core/rules.py",  # which answers a scorer can score
    "read_answer": "grader/engine/scoring/scorer_core/pool.py",
    "question_split": "grader/calibrate/scorer_cv.py",  # the one fold split
    "fit_model": "grader/calibrate/scorer_fit.py",  # the one fitter
}
RETIRED = {"eligible_neighbours", "decided_share", "copy_shares", "with_neighbours",
           "grouped_folds", "band_of"}  # fmt: skip
COPY_CODE = "copy"  # who decided a copy's grade: compared through scorer_core.rules.COPY


def rules_written_again(files: Mapping[str, str]) -> list[str]:
    """Places that write a scorer rule again: a function with a rule's name outside its home
    (in ``grader``; a benchmark may name its own ``decide``) or with a retired name, a
    ``GroupKFold`` outside the one fold split, a comparison with the copy code's string."""
    found = []
    home_of_split = SCORER_RULES["question_split"]
    for path, source in sorted(files.items()):
        for node in ast.walk(ast.parse(source)):
            where = f"{path}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.FunctionDef):
                home = SCORER_RULES.get(node.name)
                ours = path.startswith("grader/") and home is not None and path != home
                if ours or node.name in RETIRED:
                    found.append(f"{where} defines {node.name}")
            elif isinstance(node, ast.Name | ast.Attribute) and path != home_of_split:
                if (node.id if isinstance(node, ast.Name) else node.attr) == "GroupKFold":
                    found.append(f"{where} splits folds with GroupKFold")
            elif isinstance(node, ast.Compare) and not path.startswith(
                "grader/engine/scoring/scorer_core/"
            ):
                sides = [node.left, *node.comparators]
                if any(isinstance(x, ast.Constant) and x.value == COPY_CODE for x in sides):
                    found.append(f"{where} compares with {COPY_CODE!r}")
    return found


def test_the_scorer_rules_live_in_one_place():
    files = {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
        for folder in (*PACKAGES, "benchmarks")
        for p in sorted((ROOT / folder).rglob("*.py"))
    }
    assert rules_written_again(files) == []


def test_a_scorer_rule_written_again_is_caught():
    files = {
        "grader/engine/scoring/scorer_grade.py": "def decide(features, scorer, copies):\n    pass\n",
        "grader/engine/scoring/scorer_core/rules.py": "def decide(reading, scorer):\n    pass\n",
        "benchmarks/x.py": textwrap.dedent(
            """
            from sklearn.model_selection import GroupKFold
            def decide(figures, groups):
                folds = GroupKFold(5).split(figures, groups=groups)
                return [g for g in figures if g.decided == "copy"], folds
            """
        ),
    }
    assert rules_written_again(files) == [
        "benchmarks/x.py:4 splits folds with GroupKFold",
        "benchmarks/x.py:5 compares with 'copy'",
        "grader/engine/scoring/scorer_grade.py:1 defines decide",
    ]


# --- the checker itself catches what it must ------------------------------------------------


def _fake(**modules: str) -> dict[str, set[str]]:
    """The import graph of made-up modules: name -> source."""
    sources = {name: (textwrap.dedent(src), False) for name, src in modules.items()}
    return graph(sources)


def test_a_wrong_way_import_is_caught_even_inside_a_function():
    edges = _fake(
        **{
            "grader.judge.fake": """
                def f():
                    from grader.engine.pipeline import Pipeline
                """,
            "grader.engine.pipeline": "from grader.judge.fake import f\n",
        }
    )
    assert wrong_way(edges) == ["grader.judge.fake (judge) imports grader.engine.pipeline (engine)"]


def test_type_checking_imports_and_relative_imports_count():
    edges = _fake(
        **{
            "grader.config": """
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    from grader.engine.reading.objective import MultipleChoiceCredit
                """,
            "grader.engine.reading.objective": "from ...models import Question\n",
            "grader.models": "",
        }
    )
    assert edges["grader.engine.reading.objective"] == {"grader.models"}
    assert wrong_way(edges) == [
        "grader.config (config) imports grader.engine.reading.objective (engine)"
    ]


def test_an_import_of_a_later_stage_or_the_pipeline_is_caught():
    edges = _fake(
        **{
            "grader.engine.reading.rubrics": "from grader.engine.signals.cohort import x\n",
            "grader.engine.signals.cohort": "def f():\n    from grader.engine import pipeline\n",
            "grader.engine.scoring.scorer_core.rules": "from grader.engine.judging.modes import m\n",
            "grader.engine.judging.modes": "",
            "grader.engine.pipeline": "from grader.engine.review.queue import q\n",
            "grader.engine.review.queue": "",
            "grader.engine.helpers": "",
        }
    )
    assert stages_out_of_order(edges) == [
        "grader.engine.helpers: in no stage of " + str(STAGES),
        "grader.engine.reading.rubrics (reading) imports grader.engine.signals.cohort (signals)",
        "grader.engine.signals.cohort (signals) imports grader.engine.pipeline (the root)",
    ]


def test_a_new_room_must_be_declared():
    edges = _fake(**{"grader.attic.junk": "import grader.models\n", "grader.models": ""})
    assert wrong_way(edges) == [
        "grader.attic.junk: room 'attic' is not in ALLOWED; add it on purpose"
    ]


def test_a_cycle_is_found_however_lazy():
    edges = _fake(
        **{
            "workers.app": "import workers.hooks\n",
            "workers.hooks": "def start():\n    from workers.app import app\n",
            "workers.tasks": "import workers.app\n",
        }
    )
    assert cycles(edges) == [["workers.app", "workers.hooks"]]
    assert cycles(_fake(**{"workers.app": "import workers.tasks\n", "workers.tasks": ""})) == []


# --- benchmarks: a package, run as ``python -m benchmarks.<name>`` ----------------------------

# A handful of maintained entry points at the top, their shared library in ``benchmarks/lib``
# (benchmarks/README.md, "Layout"); explorations live in docs/research, not here.
MAX_BENCHMARK_ENTRY_POINTS = 12


def benchmark_imports(sources: Mapping[str, str]) -> tuple[list[str], dict[str, set[str]]]:
    """(bare sibling imports, the import graph) of the benchmark modules ``sources`` (module
    path under ``benchmarks``, such as ``agreement`` or ``lib.common`` -> source): ``import
    common`` or ``from lib.splits import Item`` only works with the script's folder on
    ``sys.path``; the package imports ``benchmarks.lib.common``."""
    siblings = {n.split(".")[-1] for n in sources} | {n.split(".")[0] for n in sources}
    bare, edges = [], {}
    for name, source in sorted(sources.items()):
        edges[f"benchmarks.{name}"] = targets = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            if names[0].split(".")[0] in siblings:
                where = name.replace(".", "/")
                bare.append(f"benchmarks/{where}.py:{node.lineno} imports {names[0]}")
            for imported in names:
                rest = imported.removeprefix("benchmarks.")
                found = [k for k in sources if rest == k or rest.startswith(f"{k}.")]
                if imported.startswith("benchmarks.") and found:
                    targets.add(f"benchmarks.{max(found, key=len)}")
        targets.discard(f"benchmarks.{name}")
    return bare, edges


def test_benchmarks_are_a_package_without_bare_imports_or_cycles():
    folder = ROOT / "benchmarks"
    assert (folder / "__init__.py").is_file() and (folder / "lib" / "__init__.py").is_file()
    sources = {
        ".".join(p.relative_to(folder).with_suffix("").parts): p.read_text(encoding="utf-8")
        for p in sorted(folder.rglob("*.py"))
        if p.name != "__init__.py"
    }
    bare, edges = benchmark_imports(sources)
    assert bare == []
    assert cycles(edges) == []
    assert not [s for s in sources.values() if "sys.path.insert" in s]
    assert len(list(folder.glob("*.py"))) <= MAX_BENCHMARK_ENTRY_POINTS


def test_a_bare_benchmark_import_and_a_benchmark_cycle_are_caught():
    sources = {
        "lib.common": "",
        "a": "from benchmarks.b import x\n",
        "b": "def f():\n    from benchmarks.a import y\n",
        "c": "import common\nfrom lib.splits import Item\nfrom benchmarks.lib.common import ROOT\n",
        "lib.splits": "",
    }
    bare, edges = benchmark_imports(sources)
    assert bare == ["benchmarks/c.py:1 imports common", "benchmarks/c.py:2 imports lib.splits"]
    assert edges["benchmarks.c"] == {"benchmarks.lib.common"}
    assert cycles(edges) == [["benchmarks.a", "benchmarks.b"]]
