"""A model's accuracy thresholds in the manifest: checked with a ManifestError naming the file and
key, written back by save_manifest, and applied by run_model to every run of that model (a
test's own thresholds over them) on a simulated board."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.diff.accuracy import AccuracyError, Thresholds
from npu_hil.harness.models import ManifestError, load_manifest
from npu_hil.harness.models.manifest import ACCURACY_KEYS, parse_manifest, save_manifest


def manifest(accuracy: Any) -> dict[str, Any]:
    return {"version": 1, "models": {"conv3x3": {"onnx": "c.onnx", "accuracy": accuracy}}}


def test_thresholds_are_read_and_written_back(tmp_path: Path) -> None:
    parsed = parse_manifest(manifest({"cosine_min": 0.99, "snr_db_min": 30}), base=tmp_path)
    assert parsed.model("conv3x3").accuracy == {"cosine_min": 0.99, "snr_db_min": 30.0}
    again = load_manifest(save_manifest(parsed, tmp_path / "m.json"))
    assert again.model("conv3x3").accuracy == parsed.model("conv3x3").accuracy
    assert parse_manifest(manifest(None)).model("conv3x3").accuracy == {}


def test_the_manifest_knows_the_thresholds_keys() -> None:
    assert set(ACCURACY_KEYS) == set(Thresholds().__dataclass_fields__)


@pytest.mark.parametrize(
    ("accuracy", "message"),
    [
        ([0.99], r"m.json: models.conv3x3.accuracy: expected a mapping, got list"),
        ({"snr": 30}, r"m.json: models.conv3x3.accuracy.snr: unknown key \(expected cosine_min"),
        ({"snr_db_min": "30"}, r"models.conv3x3.accuracy.snr_db_min: expected a finite number"),
        ({"snr_db_min": True}, r"models.conv3x3.accuracy.snr_db_min: expected a finite number"),
        ({"snr_db_min": 1e999}, r"accuracy.snr_db_min: expected a finite number, got inf"),
        ({"cosine_min": 2}, r"models.conv3x3.accuracy.cosine_min: expected a cosine in \[-1, 1\]"),
        ({"max_rel_err_max": -0.1}, r"accuracy.max_rel_err_max: expected a limit >= 0"),
    ],
)
def test_bad_thresholds_name_the_file_and_key(tmp_path: Path, accuracy: Any, message: str) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(manifest(accuracy)))
    with pytest.raises(ManifestError, match=message):
        load_manifest(path)


INVENTORY = """\
manifest: m.json
boards:
  - {name: rk3588-01, target: rk3588, backend: sim, transport: local}
"""


@pytest.mark.slow
def test_run_model_holds_a_model_to_its_manifest_thresholds(tmp_path: Path) -> None:
    from npu_hil.harness.farm import Farm
    from npu_hil.harness.pipeline import run_model

    (tmp_path / "m.json").write_text(json.dumps(manifest({"snr_db_min": 200})))
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    x = {"input": np.random.default_rng(1).integers(0, 255, (1, 3, 6, 7)).astype(np.uint8)}
    with Farm(tmp_path / "inventory.yaml", workdir=tmp_path / "work") as farm:
        session = farm.ready("rk3588-01")
        held = run_model(session, "conv3x3", x)
        (output,) = held.outputs
        assert output.ok and output.accuracy is not None  # the bytes are right
        assert not held.ok and not output.accurate  # int8 cannot reach 200 dB
        assert output.accuracy_breaches[0].endswith("< 200 dB")
        assert "accuracy output output: SNR" in held.summary()
        # a test's own thresholds override the manifest's
        relaxed = run_model(session, "conv3x3", x, accuracy={"snr_db_min": 20})
        assert relaxed.ok and relaxed.outputs[0].accuracy_breaches == ()
        # another model has no entry: its figures are reported only
        other = run_model(session, "conv1x1", x)
        assert other.ok and other.outputs[0].accuracy is not None
        assert output.accuracy.inputs == "given"  # the float model ran on the caller's inputs
        # the simulator's faults: garbage values are far from the float model, a truncated
        # buffer cannot be dequantized at all (the byte diff says why)
        garbage = run_model(session, "conv1x1", x, faults=["garbage"]).outputs[0]
        assert not garbage.ok and garbage.accuracy is not None
        assert garbage.accuracy.snr_db < 10 < other.outputs[0].accuracy.snr_db
        truncated = run_model(session, "conv1x1", x, faults=["truncated-output"]).outputs[0]
        assert truncated.accuracy is None
        assert truncated.accuracy_note.startswith("no accuracy figures: ")
        with pytest.raises(AccuracyError, match="unknown key"):
            run_model(session, "conv3x3", x, accuracy={"snr": 1})


def test_inputs_not_in_the_models_form_leave_the_reference_to_the_oracle(tmp_path: Path) -> None:
    """An input the model does not take as given (an NV12 frame for an NCHW model): no float
    run on it, the oracle's output on what the device held stands in."""
    from npu_hil.harness.models import build
    from npu_hil.harness.pipeline.check import _float_reference

    path = tmp_path / "m.onnx"
    path.write_bytes(build("conv1x1", (1, 3, 4, 4)).SerializeToString())
    image = np.zeros((1, 3, 4, 4), dtype=np.uint8)
    assert set(_float_reference(path, {"input": image})) == {"output"}
    assert _float_reference(path, {"input": np.zeros((1, 6, 4), dtype=np.uint8)}) == {}
    assert _float_reference(path, {"frame": image}) == {}
