"""The model manifest: JSON and YAML, paths relative to the file, artifacts per target, and a
typed ManifestError naming the file and key for everything wrong."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.models import Manifest, ManifestError, ModelEntry, load_manifest
from npu_hil.harness.models.manifest import parse_manifest, save_manifest

GOOD = {
    "version": 1,
    "models": {
        "conv3x3": {
            "onnx": "conv3x3.onnx",
            "artifacts": {
                "rk3588": "build/conv3x3.rk3588.rknn",
                "rdk-x5": "build/conv3x3.bin",
                "rdk-s100": "build/conv3x3.hbm",
                "kl730": "/abs/conv3x3.nef",
            },
        },
        "identity": {"onnx": "identity.onnx"},
    },
}

YAML = """\
version: 1
models:
  conv3x3:
    onnx: conv3x3.onnx
    artifacts:
      rk3588: build/conv3x3.rk3588.rknn
      rdk-x5: build/conv3x3.bin
      rdk-s100: build/conv3x3.hbm
      kl730: /abs/conv3x3.nef
  identity:
    onnx: identity.onnx
"""


def write(tmp_path: Path, name: str, content: Any) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.mark.parametrize(("name", "content"), [("m.json", GOOD), ("m.yaml", YAML)])
def test_load(tmp_path: Path, name: str, content: Any) -> None:
    if name.endswith(".yaml"):
        pytest.importorskip("yaml", reason="YAML manifests need PyYAML")
    manifest = load_manifest(write(tmp_path, name, content))
    entry = manifest.model("conv3x3")
    assert entry.onnx == tmp_path / "conv3x3.onnx"
    assert entry.artifact("rk3588") == tmp_path / "build" / "conv3x3.rk3588.rknn"
    assert entry.artifact("kl730") == Path("/abs/conv3x3.nef")
    assert entry.artifact("rk3566") is None
    assert manifest.model("identity").artifacts == {}


def for_run(entry: ModelEntry, target: str, *, simulated: bool) -> Path:
    """What a run deploys: the ONNX on a simulated board, the artifact on a real one."""
    return entry.require_onnx() if simulated else entry.require_artifact(target)


def test_artifacts_on_disk_and_what_a_run_deploys(tmp_path: Path) -> None:
    manifest = load_manifest(write(tmp_path, "m.json", GOOD))
    entry = manifest.model("conv3x3")
    with pytest.raises(ManifestError, match=r"models.conv3x3.onnx: .* does not exist"):
        for_run(entry, "rk3588", simulated=True)
    (tmp_path / "conv3x3.onnx").write_bytes(b"onnx")
    assert for_run(entry, "rk3588", simulated=True) == tmp_path / "conv3x3.onnx"
    with pytest.raises(ManifestError, match=r"artifacts.rk3588: .*conv3x3.rk3588.rknn does not"):
        for_run(entry, "rk3588", simulated=False)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "conv3x3.rk3588.rknn").write_bytes(b"rknn")
    assert entry.require_artifact("rk3588").name == "conv3x3.rk3588.rknn"
    with pytest.raises(ManifestError, match=r"no compiled artifact for rv1106 \(expected a .rknn"):
        entry.require_artifact("rv1106")
    with pytest.raises(ManifestError, match="unknown target 'rk9999'"):
        entry.artifact("rk9999")


def test_unknown_models_list_the_known_ones(tmp_path: Path) -> None:
    manifest = load_manifest(write(tmp_path, "m.json", GOOD))
    with pytest.raises(ManifestError, match=r"no model 'yolo' .*models: conv3x3, identity"):
        manifest.model("yolo")


def with_change(path: str, value: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(GOOD))
    keys = path.split(".")
    node = data
    for key in keys[:-1]:
        node = node[key]
    if value is None:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return data


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([1, 2], "the manifest: expected a mapping"),
        (with_change("version", 2), "version: expected 1, got 2"),
        (with_change("version", None), "version: expected 1, got None"),
        (with_change("modles", {}), "modles: unknown key"),
        (with_change("models", []), "models: expected a mapping"),
        (with_change("models.conv3x3.onnx", None), "models.conv3x3: missing 'onnx'"),
        (with_change("models.conv3x3.onnx", "conv.pb"), "models.conv3x3.onnx: expected an .onnx"),
        (with_change("models.conv3x3.onnx", 7), "models.conv3x3.onnx: expected a file path"),
        (with_change("models.conv3x3.artefacts", {}), "models.conv3x3.artefacts: unknown key"),
        (
            with_change("models.conv3x3.artifacts.rk3588", "x.bin"),
            r"models.conv3x3.artifacts.rk3588: expected a .rknn file for rk3588, got 'x.bin'",
        ),
        (
            with_change("models.conv3x3.artifacts.rdk-x5", "x.rknn"),
            r"artifacts.rdk-x5: expected a .hbm or .bin file",
        ),
        (with_change("models.conv3x3.artifacts.kl730", "x.onnx"), "expected a .nef file"),
        (with_change("models.conv3x3.artifacts.rk3599", "x.rknn"), "unknown target 'rk3599'"),
        (with_change("models.conv3x3.artifacts", ["x"]), "artifacts: expected a mapping"),
    ],
)
def test_bad_manifests(tmp_path: Path, data: Any, match: str) -> None:
    path = write(tmp_path, "farm-models.json", data)
    with pytest.raises(ManifestError, match=match) as exc:
        load_manifest(path)
    assert exc.value.message.startswith(str(path))
    assert isinstance(exc.value, NpuHilError)


def test_syntax_errors_say_where(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"m.json:3:5: not valid JSON"):
        load_manifest(write(tmp_path, "m.json", '{\n  "version": 1,\n    oops\n}'))
    with pytest.raises(ManifestError, match="no such manifest file"):
        load_manifest(tmp_path / "absent.json")


def test_yaml_syntax_errors_say_where(tmp_path: Path) -> None:
    pytest.importorskip("yaml", reason="YAML manifests need PyYAML")
    with pytest.raises(ManifestError, match=r"m.yaml:3:7: not valid YAML"):
        load_manifest(write(tmp_path, "m.yaml", "version: 1\nmodels:\n  a: b: c\n"))


def test_yaml_without_pyyaml_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml now raises ImportError
    with pytest.raises(ManifestError, match=r"needs PyYAML \(pip install pyyaml\); or write"):
        load_manifest(write(tmp_path, "m.yml", YAML))


def test_save_round_trip(tmp_path: Path) -> None:
    manifest = parse_manifest(GOOD, base=tmp_path / "models")
    path = save_manifest(manifest, tmp_path / "models" / "manifest.json")
    saved = json.loads(path.read_text())
    assert saved["models"]["conv3x3"]["onnx"] == "conv3x3.onnx"  # relative again
    assert saved["models"]["conv3x3"]["artifacts"]["kl730"] == "/abs/conv3x3.nef"
    again: Manifest = load_manifest(path)
    assert again.models.keys() == manifest.models.keys()
    assert again.model("conv3x3").artifacts == manifest.model("conv3x3").artifacts
