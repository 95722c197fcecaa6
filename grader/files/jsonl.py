"""JSON lines read so that every malformed line names its file and line.

``json.loads`` fails in ways that are not ``JSONDecodeError``: bytes that are not UTF-8, a
number with more digits than Python converts (``ValueError``), nesting deeper than the
interpreter's stack (``RecursionError``). Each becomes the caller's located error here, so a
hand-made file never ends in a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grader.errors import CalibrationError, SubmissionError


def json_problem(exc: ValueError | RecursionError) -> str:
    """What is wrong with text ``json.loads`` refused, in words."""
    if isinstance(exc, RecursionError):
        return "malformed JSON: nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return f"malformed JSON: not UTF-8 (byte 0x{exc.object[exc.start]:02x} at {exc.start})"
    if isinstance(exc, json.JSONDecodeError):
        return f"malformed JSON: {exc}"
    return f"malformed JSON: a number too long to read ({str(exc).split(':')[0]})"


def json_lines(
    path: Path, error: type[SubmissionError | CalibrationError], what: str
) -> Iterator[tuple[int, Any]]:
    """Each non-blank line's number and JSON value, or ``error`` naming the file and line.

    ``what`` says what the file should be, for the message when it cannot be opened.
    """
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror}", file=path) from exc
    with handle:
        for number, raw in enumerate(handle, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise error(
                    f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                    file=path,
                    line=number,
                ) from exc
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise error(f"invalid JSON: {exc.msg}", file=path, line=number) from exc
            except (ValueError, RecursionError) as exc:
                raise error(json_problem(exc), file=path, line=number) from exc
            yield number, value
