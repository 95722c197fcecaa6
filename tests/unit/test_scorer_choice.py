"""Which scorer grades an exam is decided in one place, ``scorer_choice.choose_scorer``: its
whole decision table, the setting parsed once into a typed value, and no other module of
``grader`` or ``workers`` reading a scorer file for grading."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.engine.scoring.scorer_choice import (
    EXAM_SCORER_FILE,
    ScorerKind,
    ScorerSetting,
    ScorerSource,
    choose_scorer,
    exam_scorer_path,
    scorer_setting,
)
from grader.engine.scoring.scorer_model import ScorerSet, from_json, load_scorer, to_json
from grader.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = load_scorer("default")
assert DEFAULT is not None


def variant(**update: list) -> ScorerSet:
    """The default with parts left out: another scorer, with its own version."""
    return from_json(to_json(DEFAULT.model_copy(update=update)))


# scorers told apart by their versions: an explicit file, the exam's own, an applied one
EXPLICIT, OWN, APPLIED = (
    variant(confidence=[]),
    variant(graded=[]),
    variant(graded=[], confidence=[]),
)


@dataclass(frozen=True)
class Applied:
    """What the service's store hands over (``ExamScorer`` has these three fields)."""

    exam: str
    version: str
    text: str


def version(scorer: ScorerSet | None) -> str | None:
    return None if scorer is None else scorer.version


def written(path: Path, scorer: ScorerSet) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_json(scorer), encoding="utf-8")
    return path


@pytest.fixture
def exam(tmp_path: Path) -> dict:
    """A bank with its own scorer.json, an explicit scorer file and an applied scorer."""
    bank = tmp_path / "exam.yaml"
    written(exam_scorer_path(bank), OWN)
    explicit = written(tmp_path / "chosen.json", EXPLICIT)
    applied = Applied("exam", str(APPLIED.version), to_json(APPLIED))
    return {"bank": bank, "explicit": explicit, "applied": applied}


def test_the_setting_is_parsed_once_into_a_kind_and_a_path():
    assert scorer_setting(None) is None
    assert scorer_setting("default") == ScorerSetting(ScorerKind.DEFAULT)
    assert scorer_setting("none") == ScorerSetting(ScorerKind.NONE)
    assert scorer_setting("runs/scorer.json") == ScorerSetting(
        ScorerKind.FILE, Path("runs/scorer.json")
    )
    with pytest.raises(ValueError):
        ScorerSetting(ScorerKind.FILE)  # a file without its path
    with pytest.raises(ValueError):
        ScorerSetting(ScorerKind.DEFAULT, Path("x.json"))


@pytest.mark.parametrize(
    ("setting", "bank", "applied", "embeddings", "want", "source"),
    [
        # no embeddings: no scorer, whatever else is there, and nothing is read
        ("explicit", True, True, False, None, ScorerSource.NO_EMBEDDINGS),
        (None, True, True, False, None, ScorerSource.NO_EMBEDDINGS),
        ("missing", False, False, False, None, ScorerSource.NO_EMBEDDINGS),
        # an explicit choice wins over the applied scorer and the exam's file
        ("explicit", True, True, True, "explicit", ScorerSource.FILE),
        ("none", True, True, True, None, ScorerSource.NONE),
        ("default", True, True, True, "default", ScorerSource.DEFAULT),
        # then the scorer applied on the instructor pages
        (None, True, True, True, "applied", ScorerSource.APPLIED),
        (None, False, True, True, "applied", ScorerSource.APPLIED),
        # then the exam's own scorer.json
        (None, True, False, True, "own", ScorerSource.EXAM_FILE),
        # then the shipped default
        (None, False, False, True, "default", ScorerSource.DEFAULT),
    ],
)
def test_the_decision_table(exam, setting, bank, applied, embeddings, want, source):
    texts = {
        "explicit": str(exam["explicit"]),
        "missing": str(exam["bank"].parent / "missing.json"),
        "none": "none",
        "default": "default",
        None: None,
    }
    chosen = choose_scorer(
        scorer_setting(texts[setting]),
        exam["bank"] if bank else exam["bank"].with_name("other.yaml"),
        embeddings=embeddings,
        applied=exam["applied"] if applied else None,
    )
    expected = {
        "explicit": EXPLICIT,
        "own": OWN,
        "applied": APPLIED,
        "default": DEFAULT,
        None: None,
    }[want]
    assert chosen.source is source
    assert version(chosen.scorer) == version(expected)


def test_sources_are_named_for_messages(exam):
    own = choose_scorer(None, exam["bank"])
    assert own.path == exam["bank"].with_suffix("") / EXAM_SCORER_FILE
    assert own.label == f"exam file {own.path}"
    explicit = choose_scorer(scorer_setting(str(exam["explicit"])))
    assert explicit.label == f"file {exam['explicit']}"
    assert choose_scorer(None).label == "default"
    assert choose_scorer(scorer_setting("none")).label == "none"


def test_without_a_bank_the_default_grades():
    assert choose_scorer(None).scorer == DEFAULT
    assert choose_scorer(None, embeddings=True).source is ScorerSource.DEFAULT


def test_a_broken_file_is_an_error_never_a_fall_back(exam, tmp_path):
    exam_scorer_path(exam["bank"]).write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"scorer\.json"):
        choose_scorer(None, exam["bank"])
    with pytest.raises(ConfigError, match=r"missing\.json"):
        choose_scorer(scorer_setting(str(tmp_path / "missing.json")), exam["bank"])


def test_the_applied_text_is_read_only_when_it_decides(exam):
    broken = Applied("exam", "0" * 12, "not json")
    chosen = choose_scorer(scorer_setting("default"), exam["bank"], applied=broken)
    assert chosen.source is ScorerSource.DEFAULT
    with pytest.raises(ValueError, match="the scorer applied to exam"):
        choose_scorer(None, exam["bank"], applied=broken)


def test_a_file_named_like_a_word_is_still_a_file(tmp_path, monkeypatch):
    """The typed setting never turns back into the words: a file named ``none`` is a file."""
    monkeypatch.chdir(tmp_path)
    written(tmp_path / "none", EXPLICIT)
    chosen = choose_scorer(ScorerSetting(ScorerKind.FILE, Path("none")))
    assert version(chosen.scorer) == EXPLICIT.version


# --- the layout: one chooser ------------------------------------------------------------------

# ``load_scorer`` is defined in the scorer module and called, for grading, by the chooser only.
MAY_LOAD = {"grader/engine/scoring/scorer_model.py", "grader/engine/scoring/scorer_choice.py"}


def loads_outside_the_chooser(files: dict[str, str]) -> list[str]:
    """Calls of ``load_scorer`` (by name or attribute) outside ``MAY_LOAD``."""
    found = []
    for path, source in sorted(files.items()):
        if path in MAY_LOAD:
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
                if name == "load_scorer":
                    found.append(f"{path}:{node.lineno}")
    return found


def test_only_the_chooser_loads_a_scorer():
    files = {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
        for folder in ("grader", "workers")
        for p in sorted((ROOT / folder).rglob("*.py"))
    }
    assert loads_outside_the_chooser(files) == []


def test_a_second_chooser_is_caught():
    files = {
        "grader/engine/pipeline.py": "from grader.engine.scoring.scorer_model import load_scorer\n"
        "s = load_scorer('default') if embedder else None\n",
        "workers/tasks.py": "import grader.engine.scoring.scorer_model as sc\nsc.load_scorer(path)\n",
        "grader/engine/scoring/scorer_choice.py": "load_scorer(path)\n",
    }
    assert loads_outside_the_chooser(files) == [
        "grader/engine/pipeline.py:2",
        "workers/tasks.py:2",
    ]
