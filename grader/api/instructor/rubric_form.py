"""The rubric editor's form, read into a new rubric: every problem names its field.

One row of fields per criterion (``c<i>_id``, ``_description``, ``_points``, and text areas,
one entry a line: ``_key_points``, ``_levels`` as ``points: descriptor``, ``_wrong_claims`` as
``claim`` or ``claim | points``; ``_remove`` ticked drops it); the blank row at the end adds
one. The conclusion (``conclusion_kind`` blank: none), the anchors (a line
each, ``id: C1=1 C2=0.5``; a line deleted removes the anchor, whose answer text stays as it was
promoted) and the notes. Penalties are kept as they are, and so are a criterion's decisive
parts and the patterns of its wrong claims (written in the rubric's file).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import get_args

from pydantic import ValidationError

from grader.api.instructor.forms import MAX_CLAIM_CHARS, FormError
from grader.models import Anchor, Conclusion, ConclusionKind, Criterion, Level, Rubric, WrongClaim
from grader.text import match_key

MAX_CRITERIA = 12
MAX_TEXT = 2000  # a description, a key point, a descriptor
KINDS = get_args(ConclusionKind)


def criterion_rows(rubric: Rubric) -> int:
    """How many criterion rows the form shows: each criterion's, and a blank one to add."""
    return min(len(rubric.criteria) + 1, MAX_CRITERIA)


def parse_rubric_form(form: Mapping[str, str], current: Rubric) -> Rubric:
    """The rubric the form describes (not yet checked against its question: see
    ``rubric_problems``); a FormError naming the first field that cannot be read."""
    criteria = [
        _with_claims(c, current)
        for i in range(MAX_CRITERIA)
        if (c := _criterion(form, i)) is not None
    ]
    if not criteria:
        raise FormError("c0_id", "a rubric needs at least one criterion")
    data = {
        **current.model_dump(exclude={"version", "criteria", "anchors", "conclusion", "notes"}),
        "points": _number(form, "points", positive=True),
        "criteria": criteria,
        "anchors": _anchors(form, current),
        "conclusion": _conclusion(form),
        "notes": _text(form, "notes") or None,
        "reviewed": True,  # an instructor wrote it
    }
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise FormError(".".join(str(p) for p in first["loc"]), first["msg"]) from exc


def _criterion(form: Mapping[str, str], i: int) -> Criterion | None:
    prefix = f"c{i}_"
    if form.get(prefix + "remove") == "on":
        return None
    cid = _text(form, prefix + "id")
    rest = [
        _text(form, prefix + f) for f in ("description", "key_points", "levels", "wrong_claims")
    ]
    if not cid:
        if any(rest):
            raise FormError(prefix + "id", "give the criterion an id (e.g. C6)")
        return None
    description = _text(form, prefix + "description")
    if not description:
        raise FormError(prefix + "description", f"criterion {cid} needs a description")
    points = _number(form, prefix + "points", positive=True)
    try:
        return Criterion(
            id=cid,
            description=description,
            points=points,
            key_points=_lines(form, prefix + "key_points"),
            levels=[
                _level(form, prefix + "levels", line) for line in _lines(form, prefix + "levels")
            ],
            wrong_claims=[
                _claim(form, prefix + "wrong_claims", line)
                for line in _lines(form, prefix + "wrong_claims")
            ],
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = first["loc"][0] if first["loc"] else "id"
        raise FormError(prefix + str(where), f"{cid}: {first['msg']}") from exc


def _with_claims(criterion: Criterion, current: Rubric) -> Criterion:
    """The criterion with what the form does not edit kept from the criterion of the same id:
    its decisive parts, and the patterns its unchanged wrong claims are recognised by (the
    rubric's file is where they are written: README, Rubrics)."""
    before = next((c for c in current.criteria if c.id == criterion.id), None)
    if before is None:
        return criterion
    patterns = {match_key(w.claim): w.when for w in before.wrong_claims if w.when}
    claims = [
        w.model_copy(update={"when": patterns.get(match_key(w.claim), [])})
        for w in criterion.wrong_claims
    ]
    return criterion.model_copy(update={"parts": before.parts, "wrong_claims": claims})


def _level(form: Mapping[str, str], field: str, line: str) -> Level:
    points, sep, descriptor = line.partition(":")
    if not sep:
        points, sep, descriptor = line.partition("：")
    if not sep or not descriptor.strip():
        raise FormError(field, f"{line!r}: write a level as 'points: what such an answer does'")
    return Level(points=_parse_number(points.strip(), field), descriptor=descriptor.strip())


def _claim(form: Mapping[str, str], field: str, line: str) -> WrongClaim:
    claim, sep, points = line.rpartition("|")
    if not sep:
        claim, points = line, ""
    claim = " ".join(claim.split())
    if len(claim) > MAX_CLAIM_CHARS:
        raise FormError(field, f"{claim[:20]!r}…: {len(claim)} characters; the limit is 200")
    if len(claim) < 2:
        raise FormError(field, f"{line!r} is too short to recognise in an answer")
    value = _parse_number(points.strip(), field) if points.strip() else None
    if value is not None and value <= 0:
        raise FormError(field, f"{line!r}: the points it takes must be more than 0")
    return WrongClaim(claim=claim, points=value)


def _anchors(form: Mapping[str, str], current: Rubric) -> list[Anchor]:
    """The current anchors the form keeps, with the scores it gives them."""
    by_id = {a.id: a for a in current.anchors}
    kept = []
    for line in _lines(form, "anchors"):
        aid, _, scores = line.partition(":")
        anchor = by_id.get(aid.strip())
        if anchor is None:
            raise FormError(
                "anchors", f"no anchor {aid.strip()!r}: promote answers from their cards"
            )
        given = {}
        for part in scores.replace(",", " ").split():
            cid, sep, value = part.partition("=")
            if not sep:
                raise FormError("anchors", f"{anchor.id}: write scores as C1=1 C2=0.5")
            given[cid] = _parse_number(value, "anchors")
        kept.append(anchor.model_copy(update={"scores": given}))
    return kept


def _conclusion(form: Mapping[str, str]) -> Conclusion | None:
    kind = _text(form, "conclusion_kind")
    if not kind:
        return None
    if kind not in KINDS:
        raise FormError("conclusion_kind", f"one of {', '.join(KINDS)}, or blank for none")
    expected = _text(form, "conclusion_expected")
    if not expected:
        raise FormError("conclusion_expected", "the conclusion an answer must reach")
    cap = _text(form, "conclusion_cap")
    value = _parse_number(cap, "conclusion_cap") if cap else None
    if value is not None and value > 1:
        raise FormError("conclusion_cap", "a share of the points, 0 to 1")
    return Conclusion(
        kind=kind,  # type: ignore[arg-type]  # checked against KINDS above
        expected=expected,
        accepted=_lines(form, "conclusion_accepted"),
        wrong=_lines(form, "conclusion_wrong"),
        cap=value,
        gate=form.get("conclusion_gate") == "on",
    )


def _text(form: Mapping[str, str], field: str) -> str:
    text = (form.get(field) or "").strip()
    if len(text) > MAX_TEXT * 4:
        raise FormError(field, f"{len(text)} characters; the limit is {MAX_TEXT * 4}")
    return text


def _lines(form: Mapping[str, str], field: str) -> list[str]:
    lines = [line.strip() for line in _text(form, field).splitlines() if line.strip()]
    for line in lines:
        if len(line) > MAX_TEXT:
            raise FormError(field, f"a line of {len(line)} characters; the limit is {MAX_TEXT}")
    return lines


def _number(form: Mapping[str, str], field: str, positive: bool = False) -> float:
    text = _text(form, field)
    if not text:
        raise FormError(field, "required")
    value = _parse_number(text, field)
    if positive and value <= 0:
        raise FormError(field, f"{text} must be more than 0")
    return value


def _parse_number(text: str, field: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise FormError(field, f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise FormError(field, f"{text} is not a number of points")
    return value
