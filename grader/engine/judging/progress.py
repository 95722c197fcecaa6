"""How far ``grade_many`` has got, told to whoever asks, without knowing who that is.

A caller passes a ``Progress`` callback; the engine calls it with a stage and a count of
answers as work finishes. Every submission of a call is reported exactly once as ``RULED``,
``SET_ASIDE`` or ``JUDGED``; with an embedder, every answer that was not ``RULED`` is reported
``EMBEDDED`` first. The command line draws its progress bars from these events, the service
passes none. Nothing here knows about terminals.

The judge is where the time goes, so its work can be cut into sub-batches
(``GRADER_JUDGE_CHUNK`` requests per call): each call's answers are reported as soon as every
one of their requests has an answer. ``judge_each_once`` does that for both judge modes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from enum import StrEnum
from typing import Any, TypeVar


class Stage(StrEnum):
    RULED = "ruled"  # scored before any model: objective, blank, non-answer, the rubric pasted
    EMBEDDED = "embedded"  # the answer's signals are computed (reported per question)
    SET_ASIDE = "set_aside"  # scored after the signals without the judge: off topic, no judge
    JUDGED = "judged"  # every judge request of the answer has its reply (per sub-batch)


Progress = Callable[[Stage, int], None]


def reporter(progress: Progress | None) -> Progress:
    """``progress`` with empty counts dropped, or a callback that tells no one."""

    def tell(stage: Stage, count: int) -> None:
        if progress is not None and count:
            progress(stage, count)

    return tell


K = TypeVar("K", bound=Hashable)
R = TypeVar("R")
T = TypeVar("T")


def judge_in_chunks(
    keys_per_item: Sequence[Sequence[K]],
    batch: Sequence[tuple[K, R]],
    call: Callable[[list[R]], list[T]],
    chunk: int | None,
    progress: Progress | None,
) -> dict[K, T]:
    """Replies to every request of ``batch`` (unique keys, already in prefix order), asked
    ``chunk`` requests per ``call`` (``None`` or 0: all in one call).

    The sub-batches are consecutive slices of the sorted batch, so each stays sorted by its
    shared prefixes, and a prefix cut at a boundary is still in the backend's cache for the
    next call. After each call, the items whose every key is answered are reported as judged.
    """
    pending = [len(set(keys)) for keys in keys_per_item]
    waiting: dict[K, list[int]] = defaultdict(list)
    for i, keys in enumerate(keys_per_item):
        for key in set(keys):
            waiting[key].append(i)
    if progress is not None and (ready := pending.count(0)):
        progress(Stage.JUDGED, ready)  # items without requests: nothing to wait for
    size = chunk or max(1, len(batch))
    replies: dict[K, T] = {}
    for start in range(0, len(batch), size):
        part = batch[start : start + size]
        got = call([request for _, request in part])
        finished = 0
        for (key, _), reply in zip(part, got, strict=True):
            replies[key] = reply
            for i in waiting[key]:
                pending[i] -= 1
                finished += pending[i] == 0
        if progress is not None and finished:
            progress(Stage.JUDGED, finished)
    return replies


def judge_each_once(
    requests_per_item: Sequence[Sequence[R]],
    key: Callable[[R], K],
    order: Callable[[tuple[K, R]], Any],
    call: Callable[[list[R]], list[T]],
    chunk: int | None,
    progress: Progress | None,
) -> list[list[T]]:
    """Each item's replies, in its requests' order, every distinct request (by ``key``) asked
    once: identical answers to one question (copies, one-word answers, a cleaned twin equal
    to a clean answer) share the reply. The distinct requests go to ``judge_in_chunks`` sorted
    by ``order``, which keeps shared prefixes back to back for the backend's cache."""
    keyed = [[(key(r), r) for r in requests] for requests in requests_per_item]
    unique: dict[K, R] = {}
    for pairs in keyed:
        for k, request in pairs:
            unique.setdefault(k, request)
    batch = sorted(unique.items(), key=order)
    by_key = judge_in_chunks(
        [[k for k, _ in pairs] for pairs in keyed], batch, call, chunk, progress
    )
    return [[by_key[k] for k, _ in pairs] for pairs in keyed]


def judged_at_most(tell: Progress, limit: int) -> Progress:
    """``tell`` with at most ``limit`` answers reported judged in all: the pipeline judges
    answers of its own too (cleaned twins), but each submission is reported once."""
    left = [limit]

    def capped(stage: Stage, count: int) -> None:
        if stage == Stage.JUDGED:
            count = min(count, left[0])
            left[0] -= count
        tell(stage, count)

    return capped
