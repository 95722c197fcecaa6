"""Pad the part of a prompt that an answer's checks share to whole prefix-cache blocks.

vLLM caches a prompt's keys and values in whole blocks (32 tokens on CPU, 16 on CUDA). The
checks of one answer share everything up to the judge's reply and differ only in its opening
("第2项："); when that shared part ends inside a block, every check recomputes the block's
tail (16 tokens on average, up to 31) before its own few tokens, which would be most of what
a check costs. Blank lines after the shared part, up to the next block boundary, make all of
it cacheable: the answer's first check computes them once, the others only their opening.
"""

from __future__ import annotations


def shared_cut(rendered: str, last_content: str, shared_chars: int | None) -> int | None:
    """Where, in a rendered chat prompt, the shared part ends: ``shared_chars`` into the last
    message's content (0: where that content starts). None when the request shares nothing or
    the content is not found."""
    if shared_chars is None:
        return None
    start = rendered.rfind(last_content)
    if start < 0 or shared_chars > len(last_content):
        return None
    return start + shared_chars


def pad_to_block(shared: list[int], rest: list[int], block: int, filler: int) -> list[int]:
    """``shared`` + as many ``filler`` tokens as reach the next multiple of ``block`` + ``rest``."""
    return [*shared, *[filler] * (-len(shared) % block), *rest]
