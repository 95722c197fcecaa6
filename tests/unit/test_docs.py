"""The README and the pages under docs/ it sends readers to: every link lands, every setting
is documented.

The README keeps the user's path and links reference material in docs/; a link to a
page or a heading that moved, or a setting added without a line in docs/settings.md, is a
reader sent nowhere.
"""

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from grader.config import PARTS, env_name

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {_anchor(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)}


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_the_anchor_rule_matches_githubs():
    assert _anchor("The instructor pages' sessions") == "the-instructor-pages-sessions"
    assert _anchor("Set-up (two commands on a fresh machine)") == (
        "set-up-two-commands-on-a-fresh-machine"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_lands(page):
    broken = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        lands = where.exists() and (
            not anchor or where.suffix != ".md" or anchor in _anchors(where)
        )
        if not lands:
            broken.append(target)
    assert broken == [], f"{page.relative_to(ROOT)}: links to nothing: {broken}"


def _env_names() -> list[str]:
    """The environment name of every field of every settings part."""
    return [
        env_name(part, name)
        for part in PARTS
        for name, field in part.model_fields.items()
        if not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel))
    ]


def test_every_setting_is_documented():
    documented = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    names = _env_names()
    assert len(names) > 40
    missing = [n for n in names if f"`{n}`" not in documented]
    assert missing == [], f"add them to docs/settings.md with their default: {missing}"


def test_the_readme_is_the_users_path_not_the_design_history():
    """The README is set-up, commands, the grade record, the service and the pages: at most
    500 lines; research figures and design history live in docs/."""
    lines = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert lines.count("\n") <= 500
