"""Sentence embeddings for comparing answers with references, cached on disk.

``Embedder.encode(texts)`` takes one list and returns one 2-D float32 array in the same order,
L2-normalized, so a dot product is the cosine. The model is the packaged multilingual-e5-small
(Chinese and English in one space; see ``grader.packaged``) or any local
sentence-transformers folder.

Vectors are kept in a SQLite file under ``<cache>/embed-cache/``, keyed by the model and the
sha256 of the exact text the model saw, so grading the same answers again (a rerun, a second
rubric, another worker) costs no model time and, when every text is cached, does not even
load the model. Importing this module imports neither torch nor sentence-transformers (nor
numpy): they load on first use, so ``import grader`` works without the ``embed`` extra.

E5 cosines are compressed (unrelated texts still score ~0.75-0.85): rank with them, or
calibrate thresholds per question, rather than reading them as absolute agreement.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader.errors import ConfigError
from grader.packaged import (
    DEFAULT_EMBED_MODEL,
    PACKAGED_EMBED_MODELS,
    E5Model,
    prepare_embed_model,
)

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from grader.config import Settings

__all__ = [
    "DEFAULT_EMBED_MODEL",
    "EmbedCacheError",
    "EmbedModelError",
    "EmbedStats",
    "Embedder",
    "make_embedder",
]

_INSTALL_HINT = "pip install 'grader[embed]'"
_SQL_CHUNK = 500  # keys per IN (...) query; well under SQLite's bound-parameter limit


class EmbedModelError(ConfigError):
    """The embedding model cannot be loaded or fails to encode."""


class EmbedCacheError(ConfigError):
    """The on-disk vector cache cannot be opened or written."""


@dataclass
class EmbedStats:
    """What ``encode`` did since the embedder was made: lets callers and tests see cache effect."""

    model_calls: int = 0  # batches sent to the model
    encoded: int = 0  # distinct texts the model encoded
    cache_hits: int = 0  # texts answered from the disk cache


class Embedder:
    """Batch-first text embedder over sentence-transformers, with a disk cache.

    ``model`` is a packaged model name (default ``multilingual-e5-small``, prepared on first
    use) or a local sentence-transformers folder, decided as the judge's model setting is:
    a known name first, then an existing folder, otherwise an error.
    """

    def __init__(
        self,
        model: str | Path = DEFAULT_EMBED_MODEL,
        *,
        cache_dir: Path | None = None,
        vector_cache: Path | None = None,
        prefix: str | None = None,
        batch_size: int = 16,
        device: str | None = None,
        disk_cache: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        if cache_dir is None:
            from grader.config import Settings

            cache_dir = Settings().cache.dir
        self.cache_dir = Path(cache_dir).expanduser()
        if batch_size < 1:
            raise ConfigError(f"embedding batch_size must be >= 1, got {batch_size}")
        self.batch_size = batch_size
        self.stats = EmbedStats()
        self._device = device
        self._progress = progress
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

        self._spec: E5Model | None = None
        self._folder: Path | None = None
        self._dim: int | None = None
        if isinstance(model, str) and model in PACKAGED_EMBED_MODELS:
            self._spec = PACKAGED_EMBED_MODELS[model]
            # The folder name carries the source hash: a new upload never reads old vectors.
            self.name = self._spec.folder_name
            self._dim = self._spec.dim
            default_prefix = self._spec.prefix
        elif Path(model).expanduser().is_dir():
            self._folder = Path(model).expanduser().resolve()
            self.name = f"{self._folder}@{_fingerprint(self._folder)}"
            # A foreign model's prompt convention is unknown; callers of e5-style folders pass it.
            default_prefix = ""
        else:
            known = ", ".join(sorted(PACKAGED_EMBED_MODELS))
            raise EmbedModelError(
                f"embedding model {str(model)!r} is neither a packaged model ({known}) nor a folder"
            )
        # One prefix for every text, references and answers alike: e5's card prescribes
        # "query: " on both sides for symmetric similarity, and a text's vector then does not
        # depend on its role, so a reference cached once serves every comparison.
        self.prefix = default_prefix if prefix is None else prefix
        # Packaged models are prepared under <cache>/embed; vectors go to <cache>/embed-cache
        # unless ``vector_cache`` names another folder (tests, or a per-cohort cache).
        cache_folder = (
            self.cache_dir / "embed-cache" if vector_cache is None else Path(vector_cache)
        )
        self._cache = _VectorCache(cache_folder / "vectors.sqlite3") if disk_cache else None

    @property
    def dim(self) -> int:
        """Vector width; known without loading for packaged models, so ``encode([])`` stays free."""
        if self._dim is None:
            dim = self._load().get_embedding_dimension()
            if not dim:
                raise EmbedModelError(
                    f"embedding model {self.name!r} does not report its dimension"
                )
            self._dim = int(dim)
        return self._dim

    def encode(self, texts: list[str]) -> np.ndarray:
        """Vectors for ``texts``: shape (len(texts), dim), float32, L2-normalized, same order."""
        import numpy as np

        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            # A bare string would otherwise be embedded character by character.
            raise TypeError("Embedder.encode takes a list of strings")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)

        with self._lock:
            inputs = [self.prefix + t for t in texts]
            keys = [hashlib.sha256(s.encode("utf-8")).hexdigest() for s in inputs]
            distinct = dict(zip(keys, inputs, strict=True))
            found = self._cache.get(self.name, list(distinct)) if self._cache is not None else {}
            self.stats.cache_hits += sum(k in found for k in keys)

            # Longest first, as sentence-transformers does: batches of similar length pad
            # little, and a batch that is too big for memory fails at the start, not the end.
            todo = sorted((k for k in distinct if k not in found), key=lambda k: -len(distinct[k]))
            for start in range(0, len(todo), self.batch_size):
                batch = todo[start : start + self.batch_size]
                vectors = self._encode_batch([distinct[k] for k in batch])
                fresh = dict(zip(batch, vectors, strict=True))
                found.update(fresh)
                if (
                    self._cache is not None
                ):  # per batch, so an interrupted long run keeps what it paid for
                    self._cache.put(self.name, fresh)

            out = np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
        if self._dim is None:
            self._dim = out.shape[1]
        return out

    def load(self) -> None:
        """Load the model now, for a caller that shows loading as a step of its own; otherwise
        the first ``encode`` that misses the cache loads it."""
        self._load()

    def similarity(self, a: list[str], b: list[str]) -> np.ndarray:
        """Cosine matrix, shape (len(a), len(b)); both lists are encoded in one call."""
        vectors = self.encode([*a, *b])
        return vectors[: len(a)] @ vectors[len(a) :].T  # rows are unit vectors

    def _encode_batch(self, inputs: list[str]) -> np.ndarray:
        import numpy as np

        model = self._load()
        self.stats.model_calls += 1
        self.stats.encoded += len(inputs)
        try:
            vectors = model.encode(
                inputs,
                batch_size=len(inputs),
                convert_to_numpy=True,
                normalize_embeddings=True,  # a foreign folder may lack a Normalize module
                show_progress_bar=False,
            )
        except Exception as exc:  # torch/tokenizer errors: translate at the boundary
            raise EmbedModelError(f"embedding model {self.name!r} failed to encode: {exc}") from exc
        return np.asarray(vectors, dtype=np.float32).reshape(len(inputs), -1)

    def _load(self) -> SentenceTransformer:
        """The model, loaded once; a packaged one is converted first if this machine has no copy."""
        if self._model is not None:
            return self._model
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedModelError(
                f"embeddings need sentence-transformers: {exc}. Install with: {_INSTALL_HINT}"
            ) from exc
        if self._spec is not None:
            folder = prepare_embed_model(
                self._spec.name, self.cache_dir / "embed", progress=self._progress
            )
        else:
            assert self._folder is not None
            folder = self._folder
        try:
            self._model = SentenceTransformer(
                str(folder), device=self._device, local_files_only=True
            )
        except Exception as exc:
            raise EmbedModelError(f"cannot load the embedding model in {folder}: {exc}") from exc
        return self._model


def make_embedder(
    settings: Settings, progress: Callable[[str], None] | None = None
) -> Embedder | None:
    """The configured embedder, or None when ``embed_model`` is 'none'.

    Fails early, with the install command, when sentence-transformers is missing: a grader that
    silently skipped off-topic and duplicate checks would look the same as one that found none.
    """
    if settings.embeddings.model == "none":
        return None
    try:
        import sentence_transformers  # noqa: F401
    except ImportError as exc:
        raise EmbedModelError(
            f"answer embeddings need sentence-transformers ({exc}). Install with: "
            f"{_INSTALL_HINT}, or set GRADER_EMBED_MODEL=none to grade without them"
        ) from exc
    return Embedder(
        settings.embeddings.model,
        cache_dir=settings.cache.dir,
        batch_size=settings.embeddings.batch_size,
        progress=progress,
    )


def _fingerprint(folder: Path) -> str:
    """Cheap identity of a local model folder: a retrained model in the same path gets new keys."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            stat = path.stat()
            digest.update(
                f"{path.relative_to(folder)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode()
            )
    return digest.hexdigest()[:16]


class _VectorCache:
    """(model, sha256 of text) → float32 vector, in one SQLite file shared by processes.

    WAL mode lets several workers read while one writes; each process opens its own
    connection (a connection must not cross a fork, so it is reopened when the pid changes).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._pid = 0

    def get(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        import numpy as np

        found: dict[str, np.ndarray] = {}
        try:
            conn = self._connect()
            for start in range(0, len(keys), _SQL_CHUNK):
                chunk = keys[start : start + _SQL_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT text_sha256, vector FROM vectors WHERE model = ? AND text_sha256 IN ({marks})",
                    (model, *chunk),
                )
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype="<f4")
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        if found:  # a torn or foreign row must not mix widths into one array: re-encode it
            width = max(len(v) for v in found.values())
            found = {k: v for k, v in found.items() if len(v) == width}
        return found

    def put(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        import numpy as np

        rows = [(model, key, np.asarray(v, dtype="<f4").tobytes()) for key, v in vectors.items()]
        try:
            conn = self._connect()
            with conn:  # one transaction per batch
                conn.executemany(
                    "INSERT OR REPLACE INTO vectors (model, text_sha256, vector) VALUES (?, ?, ?)",
                    rows,
                )
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise EmbedCacheError(
                f"cannot create the embedding cache folder {self.path.parent}: {exc}"
            ) from exc
        conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL: a batch lost to a power cut is merely re-encoded; FULL would fsync every batch.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors ("
            " model TEXT NOT NULL, text_sha256 TEXT NOT NULL, vector BLOB NOT NULL,"
            " PRIMARY KEY (model, text_sha256)) WITHOUT ROWID"
        )
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _error(self, exc: sqlite3.Error) -> EmbedCacheError:
        return EmbedCacheError(
            f"the embedding cache {self.path} is unusable ({exc}); it only saves time, so "
            "deleting it is safe, or pass disk_cache=False"
        )
