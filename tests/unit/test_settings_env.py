"""Settings come in parts, but the environment names are those the README documents: every
``GRADER_*`` name in a settings table still sets its field, and every field has such a name."""

from __future__ import annotations

import enum
import os
import re
import types
import typing
from pathlib import Path

import pytest
from pydantic import SecretStr
from pydantic_settings import BaseSettings

from grader.config import PARTS, Settings, env_name

ROOT = Path(__file__).resolve().parents[2]


def documented_names() -> set[str]:
    """The ``GRADER_*`` names in the first cell of the settings tables (README, docs/)."""
    names: set[str] = set()
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith("| `GRADER_"):
                names |= set(re.findall(r"`(GRADER_[A-Z0-9_]+)`", line.split("|")[1]))
    return names


def leaves(part: type[BaseSettings], path: tuple[str, ...]) -> list[tuple[tuple[str, ...], type]]:
    """(path from ``Settings`` to a field, the part that reads it), sub-parts followed."""
    found = []
    for name, field in part.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseSettings):
            found += leaves(field.annotation, (*path, name))
        else:
            found.append(((*path, name), part))
    return found


def every_field() -> list[tuple[tuple[str, ...], type]]:
    out = []
    for name, field in Settings.model_fields.items():
        assert isinstance(field.annotation, type) and issubclass(field.annotation, BaseSettings)
        out += leaves(field.annotation, (name,))
    return out


def _without_none(annotation: object) -> object:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        (kept,) = [a for a in typing.get_args(annotation) if a is not type(None)]
        return kept
    return annotation


def another_value(annotation: object, default: object) -> tuple[str, object]:
    """(text for the environment, the value it must set): valid, and not the default."""
    kind = _without_none(annotation)
    if typing.get_origin(kind) is typing.Literal:
        choice = next(c for c in typing.get_args(kind) if c != default)
        return str(choice), choice
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        member = next(m for m in kind if m != default)
        return str(member.value), member
    if kind is bool:
        return str(not default).lower(), not default
    if kind is int:
        value = 5 if default is None else int(default) + 1  # type: ignore[call-overload]
        return str(value), value
    if kind is float:
        value = float(default) / 2 if default else 0.5  # type: ignore[arg-type]
        return str(value), value
    if kind is SecretStr:
        return "s" * 40, "s" * 40
    if kind is Path:
        return "/tmp/grader-elsewhere", Path("/tmp/grader-elsewhere")
    if typing.get_origin(kind) is list:
        return '["exam.yaml"]', [Path("exam.yaml")]
    assert kind is str, f"no test value for {annotation}"
    return "changed-by-env", "changed-by-env"


def value_at(settings: Settings, path: tuple[str, ...]) -> object:
    value: object = settings
    for name in path:
        value = getattr(value, name)
    return value.get_secret_value() if isinstance(value, SecretStr) else value


FIELDS = every_field()


def test_every_documented_name_is_read_by_a_part():
    names = {env_name(part, path[-1]) for path, part in FIELDS}
    documented = documented_names()
    assert len(documented) > 40  # the tables were found
    assert documented - names == set(), "documented, but no part reads it"


def test_every_part_is_in_settings_and_named_for_errors():
    assert {part for _, part in FIELDS} == set(PARTS)


@pytest.mark.parametrize(("path", "part"), FIELDS, ids=[".".join(p) for p, _ in FIELDS])
def test_each_environment_name_sets_its_field(monkeypatch, path, part):
    for name in [n for n in os.environ if n.startswith("GRADER_")]:
        monkeypatch.delenv(name)
    field = part.model_fields[path[-1]]
    default = value_at(Settings(), path)
    text, expected = another_value(field.annotation, default)
    monkeypatch.setenv(env_name(part, path[-1]), text)
    assert value_at(Settings(), path) == expected != default


@pytest.mark.parametrize(
    ("name", "value"), [("GRADER_JUDGE_SAMPLES", "0"), ("GRADER_JUDGE", "bogus")]
)
def test_the_command_line_names_the_variable_of_a_bad_setting(
    monkeypatch, capsys, tmp_path, name, value
):
    """A part's field is ``samples``; the person who set it wrote GRADER_JUDGE_SAMPLES."""
    import sys

    from grader.cli import main

    monkeypatch.setenv(name, value)
    monkeypatch.setenv("GRADER_DATABASE_URL", f"sqlite:///{tmp_path / 'grader.db'}")
    monkeypatch.setattr(sys, "argv", ["grader", "db", "upgrade"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    assert f"settings: {name}: " in capsys.readouterr().err
