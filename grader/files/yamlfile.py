"""YAML files instructors edit (banks, rubrics): readable output, errors with file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from grader.errors import _LocatedError


class _Dumper(yaml.SafeDumper):
    """Multi-line text as literal blocks, so a file reads like the paper it came from."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_representer)


class _StrictLoader(yaml.SafeLoader):
    """Safe loading that refuses aliases (``*name``, ``<<: *name``) and keys written twice.

    An alias repeats a node without copying it, so a short file can stand for gigabytes once
    anything walks it: a 72 KB bank whose blanks repeated one 3,000-item list took 2.4 GB. Banks
    and rubrics are written out in full, so nothing legitimate needs one. A key written twice
    in one mapping silently replaces the first (a criterion's second ``wrong_claims:`` drops
    its first list), so it is an error at the second one's line.
    """

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]  # unannotated in types-PyYAML
            raise yaml.composer.ComposerError(
                None,
                None,
                f"aliases are not allowed (*{event.anchor}): write the repeated value out",
                event.start_mark,
            )
        return super().compose_node(parent, index)  # type: ignore[arg-type]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"{key!r} is written twice in one mapping: the second would replace the first",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


def yaml_text(data: Any) -> str:
    """``data`` as the YAML files instructors read: literal blocks, key order kept."""
    return yaml.dump(data, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=100)


def write_yaml(data: Any, path: Path) -> None:
    """Write atomically: a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(yaml_text(data), encoding="utf-8")
    tmp.replace(path)


def read_yaml_mapping(
    path: Path, error: type[_LocatedError], what: str
) -> tuple[dict[str, Any], str]:
    """The mapping in ``path`` and its text, or ``error`` naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror}", file=path) from exc
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise error(
            f"invalid YAML: {getattr(exc, 'problem', exc)}",
            file=path,
            line=mark.line + 1 if mark else None,
        ) from exc
    if not isinstance(data, dict):
        raise error(f"a {what} file must be a mapping", file=path)
    return data, text
