"""Write new data into a YAML file an instructor keeps, changing only what changed: the keys,
list items and values that differ, in place, with the file's comments, order, quoting,
folded text and indentation kept (ruamel.yaml's round trip). One claim added to a rubric is a
few added lines in its diff, not the whole file rewritten.

A file whose indentation the round trip cannot reproduce exactly, or that does not exist yet,
is written whole (``write_yaml``).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from grader.files.yamlfile import write_yaml

# (mapping, sequence, offset): "  - id: C1" under a key, and PyYAML's "- id: C1"
_INDENTS = ((2, 4, 2), (2, 2, 0))


def update_yaml(path: Path, full: Any, minimal: Any) -> bool:
    """Make ``path`` hold ``full`` with the fewest changed lines; keys it lacks are added only
    where ``minimal`` (the same data less its default values) has them, so defaults the file
    leaves out stay out, and what is new is written without its defaults. True when edited
    in place, False when written whole."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        write_yaml(full, path)
        return False
    edited = edited_text(text, full, minimal)
    if edited is None:
        write_yaml(full, path)
        return False
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(edited, encoding="utf-8")
    tmp.replace(path)
    return True


def edited_text(text: str, full: Any, minimal: Any) -> str | None:
    """``text`` (a YAML file's) changed to hold ``full`` as ``update_yaml`` writes it, or None
    when the round trip cannot keep its form (it would be written whole)."""
    yaml = _round_trip(text)
    if yaml is None:
        return None
    out = io.StringIO()
    yaml.dump(_merge(yaml.load(text), full, minimal), out)
    return out.getvalue()


def _round_trip(text: str) -> Any:
    """A round-trip YAML that writes ``text`` back unchanged, or None."""
    from ruamel.yaml import YAML

    for mapping, sequence, offset in _INDENTS:
        yaml = YAML(typ="rt")
        yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
        yaml.width = 4096  # never fold a line the file did not fold
        yaml.allow_unicode = True
        yaml.preserve_quotes = True
        out = io.StringIO()
        try:
            yaml.dump(yaml.load(text), out)
        except Exception:  # the file is not plain YAML for the round trip: write it whole
            return None
        if out.getvalue() == text:
            return yaml
    return None


def _merge(old: Any, full: Any, minimal: Any) -> Any:
    """``old`` (a loaded node) changed into ``full`` where they differ, its form kept."""
    if isinstance(full, dict) and isinstance(old, dict):
        keys: dict[Any, Any] = minimal if isinstance(minimal, dict) else {}
        for key in [k for k in old if k not in full]:
            del old[key]
        for key, value in full.items():
            if key in old:
                old[key] = _merge(old[key], value, keys.get(key, value))
            elif key in keys:
                old[key] = keys[key]  # new here: as written without its defaults
        return old
    if isinstance(full, list) and isinstance(old, list):
        items: list[Any] = (
            minimal if isinstance(minimal, list) and len(minimal) == len(full) else full
        )
        while len(old) > len(full):
            del old[-1]
        for i, value in enumerate(full):
            if i < len(old):
                old[i] = _merge(old[i], value, items[i])
            else:
                old.append(items[i])
        return old
    if _same(old, full):
        return old
    if _whole(old) and isinstance(full, float) and full.is_integer():
        return int(full)  # the file wrote whole points as whole numbers: so does the edit
    return full


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _same(old: Any, new: Any) -> bool:
    """Equal values, 1 and 1.0 alike (a rubric's points read as float, written as the file had)."""
    if isinstance(old, bool) or isinstance(new, bool):
        return isinstance(old, bool) and isinstance(new, bool) and old is new
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return float(old) == float(new)
    if isinstance(old, str) and isinstance(new, str):
        return str(old) == new
    return bool(old == new)
