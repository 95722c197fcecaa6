"""An embedder double: no model, deterministic vectors, calls counted."""

from __future__ import annotations


class CountingEmbedder:
    """Deterministic unit vectors from the text's characters; counts calls to encode."""

    name = "counting"

    def __init__(self):
        self.calls: list[int] = []

    def encode(self, texts):
        import numpy as np

        self.calls.append(len(texts))
        vectors = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for ch in text:
                vectors[row, ord(ch) % 64] += 1.0
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def load(self) -> None:
        """Nothing to load: ``grader grade`` shows loading as a step and calls this."""
