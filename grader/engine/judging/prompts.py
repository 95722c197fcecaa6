"""Render the judge prompt from ``prompts/judge/<lang>/{system,user}.j2``.

Layout is for the prefix cache: the system message holds the rules, the rubric, the reference
answer and the anchors — byte-identical for every answer to one question and rubric version —
and the user message holds only the student's answer, last, inside delimiters. Templates run
in Jinja2's sandbox with StrictUndefined; student text enters only as a variable, and any copy
of the delimiters inside it is defused so it cannot close the answer block early.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from jinja2 import FileSystemLoader, StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from grader.errors import PromptError
from grader.models import Anchor, Question, Rubric

# The top-level prompts/ folder, where instructors edit the templates, seen from inside the
# package (a relative symlink), so a built wheel carries the files themselves.
PROMPTS_DIR = Path(__file__).resolve().parent / "prompt_templates"
_PARTS = ("system.j2", "user.j2")  # every prompt has both; the version hashes every .j2
# Possessive runs: "<" and 20,000 spaces is one pass, not every split of the spaces around "/".
_DELIMITER = re.compile(r"<\s*+(/?)\s*+student_answer\s*+>", re.IGNORECASE)


def _points(value: float) -> str:
    return f"{value:g}"


def defuse_delimiters(answer: str) -> str:
    """``</student_answer>`` inside an answer becomes ``‹/student_answer›``: visible, inert."""
    return _DELIMITER.sub(lambda m: f"‹{m.group(1)}student_answer›", answer)


@dataclass(frozen=True)
class Prompt:
    """A two-part chat prompt (``system.j2`` then ``user.j2``) in one language."""

    name: str
    language: str
    version: str
    folder: Path

    def render(self, **variables: object) -> list[dict[str, str]]:
        return [self.render_part("system", **variables), self.render_part("user", **variables)]

    def render_part(self, role: str, **variables: object) -> dict[str, str]:
        """One message: ``system`` (``system.j2``), ``user`` (``user.j2``) or another part of
        the prompt (``check`` for ``check.j2``), rendered as that role's text."""
        try:
            content = (
                _environment(self.folder)
                .get_template(f"{self.language}/{role}.j2")
                .render(**variables)
            )
        except TemplateError as exc:
            raise PromptError(f"cannot render {self.folder / self.language}: {exc}") from exc
        return {"role": role, "content": content}


def reference_text(question: Question) -> str:
    return question.answer if isinstance(question.answer, str) and question.answer else "（无）"


def judge_messages(
    prompt: Prompt, question: Question, rubric: Rubric, answer: str, anchors: list[Anchor]
) -> list[dict[str, str]]:
    """The judge conversation: everything but the answer is shared by a question's answers."""
    return [
        judge_system(prompt, question, rubric, anchors),
        judge_user(prompt, question, rubric, answer, anchors),
    ]


def judge_system(
    prompt: Prompt, question: Question, rubric: Rubric, anchors: list[Anchor]
) -> dict[str, str]:
    """The shared prefix, rendered once per question and anchor group: it never sees the
    answer (a template that asks for ``answer`` here fails), so it cannot vary by student."""
    return prompt.render_part(
        "system",
        question=question,
        rubric=rubric,
        reference=reference_text(question),
        anchors=anchors,
    )


def judge_user(
    prompt: Prompt, question: Question, rubric: Rubric, answer: str, anchors: list[Anchor]
) -> dict[str, str]:
    """The student's answer, last, with its delimiters defused."""
    return prompt.render_part(
        "user",
        question=question,
        rubric=rubric,
        reference=reference_text(question),
        anchors=anchors,
        answer=defuse_delimiters(answer),
    )


@lru_cache(maxsize=8)
def _environment(folder: Path) -> SandboxedEnvironment:
    env = SandboxedEnvironment(
        loader=FileSystemLoader(folder),
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters["points"] = _points
    return env


@lru_cache(maxsize=16)
def load_prompt(name: str, language: str, prompts_dir: Path = PROMPTS_DIR) -> Prompt:
    """``prompts/<name>/<language>/``; the version is a hash of its template files."""
    folder = prompts_dir / name
    for part in _PARTS:
        if not (folder / language / part).is_file():
            raise PromptError(f"missing prompt template {folder / language / part}")
    digest = hashlib.sha256()
    for path in sorted((folder / language).glob("*.j2")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return Prompt(name=name, language=language, version=digest.hexdigest()[:12], folder=folder)


def judge_prompt(language: str) -> Prompt:
    return load_prompt("judge", language)


def render_template(name: str, language: str, part: str, **variables: object) -> str:
    """One template file, ``prompts/<name>/<language>/<part>.j2``, rendered in the sandbox."""
    try:
        template = _environment(PROMPTS_DIR / name).get_template(f"{language}/{part}.j2")
        return template.render(**variables).strip()
    except TemplateError as exc:
        raise PromptError(
            f"cannot render {PROMPTS_DIR / name / language / part}.j2: {exc}"
        ) from exc


def probability_prompt(language: str) -> Prompt:
    """The probability mode's prompt: rules, the shared head and answer, one short check."""
    return load_prompt("judge_probability", language)
