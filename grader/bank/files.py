"""Bank files: import papers into a bank, and read / write the bank YAML instructors edit."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from grader.bank.paper import read_paper
from grader.bank.report import ReportEntry
from grader.errors import BankError
from grader.files.yamlfile import read_yaml_mapping, write_yaml
from grader.models import Bank

# A question id names its rubric file (``rubrics/<bank>/<id>.yaml``): letters, digits, ``_``,
# ``.`` and ``-``, starting with a letter or digit, so a hand-edited id can never be a path
# (``../../x``) or a hidden file; 80 characters keep the file name under common limits.
QUESTION_ID = re.compile(r"\w[\w.-]{0,79}")


def paper_slugs(paths: list[Path]) -> list[str]:
    """Short id prefixes for papers: '000' for '000_c6a4….txt', the full stem on a clash."""
    short = [re.split(r"[_\s]", p.stem, maxsplit=1)[0] or p.stem for p in paths]
    slugs = [s if short.count(s) == 1 else p.stem for s, p in zip(short, paths, strict=True)]
    slugs = [re.sub(r"[^\w.-]+", "-", s).strip("-") or "paper" for s in slugs]
    if len(set(slugs)) != len(slugs):
        raise BankError("two papers have the same file name; rename one", file=paths[0])
    return slugs


def import_papers(paths: list[Path], name: str) -> tuple[Bank, list[ReportEntry]]:
    """The bank of ``paths`` and the import report: every question the bank lacks something of."""
    questions, report = [], []
    for path, slug in zip(paths, paper_slugs(paths), strict=True):
        result = read_paper(path, slug)
        questions.extend(result.questions)
        report.extend(result.report)
    return Bank(name=name, papers=[p.name for p in paths], questions=questions), report


def save_bank(bank: Bank, path: Path) -> None:
    write_yaml(bank.model_dump(mode="json"), path)


def load_bank(path: Path) -> Bank:
    """Read a bank YAML; errors name the file and, where YAML knows it, the line."""
    data, text = read_yaml_mapping(path, BankError, "bank")
    try:
        bank = Bank.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        line = _question_line(text, data, first["loc"])
        raise BankError(f"{where}: {first['msg']}", file=path, line=line) from exc
    for number, question in enumerate(bank.questions):
        if not QUESTION_ID.fullmatch(question.id):
            raise BankError(
                f"questions.{number}.id: {question.id!r} cannot be a question id (it names the "
                "rubric file): use letters, digits, '_', '.' and '-', at most 80, starting "
                "with a letter or digit",
                file=path,
                line=_question_line(text, data, ("questions", number)),
            )
    return bank


def _question_line(text: str, data: dict[str, Any], loc: tuple[int | str, ...]) -> int | None:
    """Best-effort line of the question a validation error points at."""
    if len(loc) >= 2 and loc[0] == "questions" and isinstance(loc[1], int):
        try:
            qid = data["questions"][loc[1]]["id"]
        except (KeyError, IndexError, TypeError):
            return None
        for number, line in enumerate(text.splitlines(), 1):
            if re.match(rf"\s*+-?\s*+id:\s*+['\"]?{re.escape(str(qid))}['\"]?\s*$", line):
                return number
    return None
