"""Reading a posted JSON body with bounded work: a list of submissions is decoded one element
at a time and given up at the first element past the bulk limit, so a body of millions of
tiny elements (``[[],[],…]``, 8 MiB) costs no more than ``bulk_limit`` decodes before its
413, and the intake stops reading such a body once its first bytes show it. The intake runs
the decoding in a worker thread, never on the event loop.
"""

from __future__ import annotations

import json
import re
from typing import Any

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")  # JSON's whitespace; one character class: linear


class ObjectTooLarge(ValueError):
    """A body of one submission (an object) larger than any valid one can be."""

    def __init__(self, limit: int):
        super().__init__(f"a body of one submission is at most {limit} bytes")
        self.limit = limit


class TooManyItems(ValueError):
    """The body is a list longer than the limit (how much longer is not read)."""

    def __init__(self, limit: int):
        super().__init__(f"more than {limit} submissions in one request; the limit is {limit}")
        self.limit = limit


def parse_body(body: bytes, max_items: int, max_object_bytes: int | None = None) -> Any:
    """The body's JSON value, as ``json.loads`` reads it, except that a top-level list with
    more than ``max_items`` elements raises ``TooManyItems`` after decoding ``max_items`` of
    them, and a body that is not a list and is over ``max_object_bytes`` raises
    ``ObjectTooLarge`` without being decoded (an object of a million keys costs seconds). Raises ``ValueError`` (``json.JSONDecodeError``, ``UnicodeDecodeError``) or
    ``RecursionError`` for a body that is not JSON."""
    text = body.decode(json.detect_encoding(body), "surrogatepass")
    start = _past_space(text, 0)
    if not text.startswith("[", start):
        if max_object_bytes is not None and len(body) > max_object_bytes:
            raise ObjectTooLarge(max_object_bytes)
        return json.loads(text)  # one object (or a value the intake refuses): one decode
    items: list[Any] = []
    at = _past_space(text, start + 1)
    if text.startswith("]", at):
        return _end(text, at + 1, items)
    while True:
        if len(items) == max_items:
            raise TooManyItems(max_items)
        item, at = _DECODER.raw_decode(text, at)
        items.append(item)
        at = _past_space(text, at)
        if text.startswith("]", at):
            return _end(text, at + 1, items)
        if not text.startswith(",", at):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
        at = _past_space(text, at + 1)


def too_many_in_prefix(prefix: bytes, max_items: int) -> bool:
    """Whether the first bytes of a body already hold a list of more than ``max_items``
    complete elements, so the rest need not be read (``[[],[],…]`` shows it in 3 KB)."""
    try:
        parse_body(prefix.decode("utf-8", "ignore").encode(), max_items)
    except TooManyItems:
        return True
    except (ValueError, RecursionError):  # cut off mid-element, or not a list we can read
        return False
    return False


def _past_space(text: str, at: int) -> int:
    """Where the JSON whitespace from ``at`` ends (``_SPACE`` matches the empty string too)."""
    space = _SPACE.match(text, at)
    assert space is not None  # a pattern that matches the empty string always matches
    return space.end()


def _end(text: str, at: int, items: list[Any]) -> list[Any]:
    at = _past_space(text, at)
    if at != len(text):
        raise json.JSONDecodeError("Extra data", text, at)
    return items
