"""The one preparer of packaged models, on a toy spec over files of an installed package.

What every packaged model relies on: sources found through distribution metadata at pinned
versions, a pinned hash checked, the folder converted once and recognised by its marker, a
stale or half-written folder redone, and errors that say what to install.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from grader.packaged import PACKAGED_EMBED_MODELS, PACKAGED_MODELS, ModelPrepError, Pin
from grader.packaged.preparer import MARKER, is_prepared, prepare

DIST = metadata.distribution("PyYAML")
FILE = "yaml/__init__.py"
SHA = hashlib.sha256(Path(str(DIST.locate_file(FILE))).read_bytes()).hexdigest()


class ToySpec(BaseModel):
    """Copies one file of PyYAML; counts its conversions."""

    name: str = "toy"
    pin: Pin = Pin(dist="PyYAML", version=DIST.version, path=FILE, sha256=SHA)
    extra: str | None = "toy-extra"
    kind: ClassVar[str] = "model"
    marker_key: ClassVar[str] = "sha256"
    converted: ClassVar[list[Path]] = []

    @property
    def fingerprint(self) -> str:
        return self.pin.sha256 or ""

    @property
    def folder_name(self) -> str:
        return f"{self.name}-{self.fingerprint[:12]}"

    @property
    def pins(self) -> list[Pin]:
        return [self.pin]

    def disk_needed(self, sources: list[list[Path]]) -> int:
        return 1

    def convert(self, sources: list[list[Path]], work: Path, say) -> dict[str, Any]:
        ToySpec.converted.append(work)
        (work / "copy.py").write_bytes(sources[0][0].read_bytes())
        say("converted")
        return {"note": "toy"}


@pytest.fixture(autouse=True)
def _count():
    ToySpec.converted.clear()


def test_converted_once_then_recognised_by_its_marker(tmp_path):
    said: list[str] = []
    folder = prepare(ToySpec(), tmp_path, said.append)
    assert folder == tmp_path / ToySpec().folder_name
    assert (folder / "copy.py").read_bytes() == Path(str(DIST.locate_file(FILE))).read_bytes()
    marker = json.loads((folder / MARKER).read_text())
    assert marker["sha256"] == SHA and marker["note"] == "toy" and marker["name"] == "toy"
    assert said[0] == "converted" and said[-1].startswith("toy ready in")
    assert prepare(ToySpec(), tmp_path) == folder
    assert len(ToySpec.converted) == 1
    assert not (tmp_path / f".{ToySpec().folder_name}.partial").exists()


def test_a_folder_without_marker_and_a_partial_one_are_redone(tmp_path):
    stale = tmp_path / ToySpec().folder_name
    stale.mkdir()
    (stale / "half").write_text("x")
    (tmp_path / f".{ToySpec().folder_name}.partial").mkdir()
    folder = prepare(ToySpec(), tmp_path)
    assert folder == stale and not (folder / "half").exists() and (folder / MARKER).is_file()
    assert len(ToySpec.converted) == 1


def test_a_failed_conversion_leaves_nothing(tmp_path):
    class Failing(ToySpec):
        def convert(self, sources, work, say):
            raise ModelPrepError("conversion broke")

    with pytest.raises(ModelPrepError, match="conversion broke"):
        prepare(Failing(), tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [f".{Failing().folder_name}.lock"]


def test_missing_and_wrong_packages_say_what_to_install(tmp_path):
    spec = ToySpec(pin=Pin(dist="no-such-dist-grader", version="1.0", path="x"))
    with pytest.raises(ModelPrepError) as missing:
        prepare(spec, tmp_path)
    assert "no-such-dist-grader is not installed" in str(missing.value)
    assert "pip install 'grader[toy-extra]' (or: pip install 'no-such-dist-grader==1.0')" in str(
        missing.value
    )
    wrong = ToySpec(pin=Pin(dist="PyYAML", version="0.0.1", path=FILE))
    with pytest.raises(ModelPrepError, match=f"PyYAML is {DIST.version}, needs 0.0.1"):
        prepare(wrong, tmp_path)
    absent = ToySpec(pin=Pin(dist="PyYAML", version=DIST.version, path="yaml/nothing.py"))
    with pytest.raises(ModelPrepError, match=r"yaml/nothing\.py is missing.*--force-reinstall"):
        prepare(absent, tmp_path)
    assert ToySpec.converted == []


def test_a_corrupt_file_is_refused_before_converting(tmp_path):
    spec = ToySpec(pin=Pin(dist="PyYAML", version=DIST.version, path=FILE, sha256="0" * 64))
    with pytest.raises(ModelPrepError, match=r"has sha256 .*expected 0000"):
        prepare(spec, tmp_path)
    assert ToySpec.converted == []


def test_folders_prepared_before_the_move_are_still_recognised(tmp_path):
    """Renaming the modules must not make every machine convert its models again: same folder
    names, and the markers the old preparers wrote still match."""
    judge = PACKAGED_MODELS["qwen2.5-coder-1.5b-instruct"]
    e5 = PACKAGED_EMBED_MODELS["multilingual-e5-small"]
    assert judge.folder_name == "qwen2.5-coder-1.5b-instruct-cc324af070c2"
    assert e5.folder_name == "multilingual-e5-small-9895ae024634"
    old_markers = [
        (judge, {"name": judge.name, "sha256": judge.sha256, "packages": [], "prepared_at": "x"}),
        (e5, {"name": e5.name, "source_sha256": e5.fingerprint, "format": 1, "prepared_at": "x"}),
    ]
    for spec, marker in old_markers:
        folder = tmp_path / spec.folder_name
        folder.mkdir()
        (folder / MARKER).write_text(json.dumps(marker))
        assert is_prepared(folder, spec)
        (folder / MARKER).write_text(json.dumps({**marker, spec.marker_key: "other"}))
        assert not is_prepared(folder, spec)
