"""Which instructor-graded anchor answers the judge sees with an answer.

A rubric may hold more anchors than a prompt should: the judge gets the ``k`` most similar to
the answer itself, so a paraphrase is shown the anchors that read like it. Not its group's
centre: groups form among whoever shares the run, and an answer's grade must not depend on
that (one answer, one grade). The chosen anchors keep their rubric order, so every answer that picks the
same anchors shares one byte-identical prompt prefix for the cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grader.models import Anchor

if TYPE_CHECKING:
    import numpy as np


def choose_anchors(
    anchors: list[Anchor],
    k: int,
    anchor_vectors: np.ndarray | None = None,
    centre: np.ndarray | None = None,
) -> list[Anchor]:
    """At most ``k`` anchors: all when they fit, else the closest to ``centre`` (the answer's
    vector; else the first)."""
    if len(anchors) <= k:
        return list(anchors)
    if anchor_vectors is None or centre is None:
        return anchors[:k]
    closeness = anchor_vectors @ centre
    ranked = sorted(range(len(anchors)), key=lambda i: (-float(closeness[i]), i))
    return [anchors[i] for i in sorted(ranked[:k])]
