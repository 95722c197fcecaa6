"""Lay a check's prompt out on prefix-cache block boundaries.

vLLM caches a prompt's keys and values in whole blocks (32 tokens on CPU, 16 on CUDA): a later
prompt reuses only the whole blocks it shares with an earlier one. A check's prompt has three
parts: the question's head (rules, question, reference, rubric, anchors, up to the answer),
the same for every answer to the question; the answer and the rest of the user's turn up to
the judge's reply, the same for every check of that answer; and the reply's opening
("第2项："), a few tokens of its own. Blank lines make the first two parts end on block
boundaries, so each answer computes only its own part and each check only its opening. They
go where a reader sees a paragraph break, never inside the answer or the judge's reply:
before the head's last paragraph (the one that introduces the answer) and at the end of the
user's turn.
"""

from __future__ import annotations

from typing import NamedTuple


class Cuts(NamedTuple):
    """Character offsets in a rendered prompt, in order."""

    head_pad: int  # the head's blank lines go here
    head_end: int  # the answer starts here
    turn_pad: int  # the end of the user's turn: its blank lines go here
    reply: int  # the judge's reply (its opening) starts here


def cuts(rendered: str, user: str, reply: str, head_chars: int | None) -> Cuts | None:
    """Where a continued-reply prompt splits: ``user`` is the user's message, ``reply`` the
    opening the judge continues, ``head_chars`` how many leading characters of ``user`` every
    answer to the question shares (None: no shared head is known). None when the messages are
    not found in ``rendered``."""
    reply_at = rendered.rfind(reply) if reply else len(rendered)
    user_at = rendered.rfind(user, 0, reply_at)
    if user_at < 0 or reply_at < 0 or (head_chars or 0) > len(user):
        return None
    turn_pad = user_at + len(user)
    if head_chars is None:
        return Cuts(0, 0, turn_pad, reply_at)
    head_end = user_at + head_chars
    paragraph = rendered.rfind("\n\n", user_at, head_end)
    return Cuts(user_at if paragraph < 0 else paragraph, head_end, turn_pad, reply_at)


def pad_between(done: int, before: list[int], after: list[int], block: int, filler: int) -> list[int]:
    """``before`` + filler tokens + ``after``, so many fillers that the result, following
    ``done`` tokens, ends on a multiple of ``block``."""
    return [*before, *[filler] * (-(done + len(before) + len(after)) % block), *after]
