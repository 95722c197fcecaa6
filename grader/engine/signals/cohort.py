"""Relations among the answers to one question: answer groups and near-duplicate pairs.

Both work on L2-normalized answer vectors (``grader.embed``), so they need no model here and
are cheap to recompute. Groups let an instructor grade similar answers together and give
them the same anchors (one cacheable prompt prefix per group); near-duplicates are pairs of
different students' answers that are nearly the same text, for an integrity check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class AnswerGroup:
    """Answers that say nearly the same thing; ``representative`` is the most central one."""

    id: str
    members: list[int]  # indices into the answers given
    representative: int
    cohesion: float  # mean cosine of members with the group's centre

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class DuplicatePair:
    first: int  # indices into the answers given, first < second
    second: int
    similarity: float


def group_answers(vectors: np.ndarray, min_cosine: float) -> list[AnswerGroup]:
    """Average-linkage clusters whose members are, on average, at least ``min_cosine`` alike.

    Ids are ``g1``, ``g2``, … by size (largest first), then by first member, so the same
    answers always get the same ids.
    """
    import numpy as np

    count = len(vectors)
    if count == 0:
        return []
    if count == 1:
        labels = np.zeros(1, dtype=int)
    else:
        from sklearn.cluster import AgglomerativeClustering

        labels = AgglomerativeClustering(
            n_clusters=None,
            metric="cosine",
            linkage="average",
            distance_threshold=1.0 - min_cosine,
        ).fit_predict(vectors)
    clusters = [np.flatnonzero(labels == label).tolist() for label in np.unique(labels)]
    clusters.sort(key=lambda members: (-len(members), members[0]))
    groups = []
    for number, members in enumerate(clusters, 1):
        centre = centroid(vectors[members])
        closeness = vectors[members] @ centre
        groups.append(
            AnswerGroup(
                id=f"g{number}",
                members=members,
                representative=members[int(np.argmax(closeness))],
                cohesion=round(float(closeness.mean()), 4),
            )
        )
    return groups


def near_duplicates(
    vectors: np.ndarray,
    owners: Sequence[str | None],
    min_cosine: float,
    eligible: Sequence[bool] | None = None,
) -> list[DuplicatePair]:
    """Pairs at or above ``min_cosine`` whose owners differ, most similar first.

    ``owners`` are students (a ``None`` owner differs from everyone: an anonymous answer can
    still be a copy); ``eligible`` excludes answers too short to call copies.
    """
    import numpy as np

    count = len(vectors)
    if count < 2:
        return []
    matrix = vectors @ vectors.T
    first, second = np.triu_indices(count, k=1)
    keep = matrix[first, second] >= min_cosine
    pairs = []
    for i, j in zip(first[keep].tolist(), second[keep].tolist(), strict=True):
        if owners[i] is not None and owners[i] == owners[j]:
            continue
        if eligible is not None and not (eligible[i] and eligible[j]):
            continue
        pairs.append(DuplicatePair(i, j, round(float(matrix[i, j]), 4)))
    pairs.sort(key=lambda p: (-p.similarity, p.first, p.second))
    return pairs


def centroid(vectors: np.ndarray) -> np.ndarray:
    """The normalized mean direction of some unit vectors."""
    import numpy as np

    mean = vectors.mean(axis=0)
    direction: np.ndarray = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return direction
