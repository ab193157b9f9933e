"""Every adapter on Python 3.8, the way a board runs it: ``adapters.<name>`` imported from the
agent's folder (so ``adapters.base``, and nothing from ``harness``), the vendor fakes on
``sys.path``, one inference. The result must equal the same run on this interpreter."""

from __future__ import annotations

import importlib
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.board.adapters.base import InputTensor

FAKES = Path(__file__).parent / "fakes"
AGENT_DIR = Path(__file__).resolve().parents[2] / "npu_hil" / "harness" / "board"

BOARD_SCRIPT = r"""
import importlib, json, sys
agent_dir, fakes, name, options, model_path, spec = sys.argv[1:7]
sys.path[:0] = [agent_dir, fakes]
import numpy as np
module = importlib.import_module("adapters." + name)
from adapters.base import Adapter, InputTensor
assert issubclass(module.ADAPTER, Adapter), "the adapter must build on adapters.base"
spec = json.loads(spec)
adapter = module.ADAPTER(json.loads(options))
model = adapter.load(model_path)
data = np.frombuffer(bytes.fromhex(spec["hex"]), dtype=np.uint8)
tensor = InputTensor(spec["name"], data, spec["layout"], spec["shape"], spec["dtype"],
                     spec["pass_through"])
result = adapter.run(model, [tensor], None)
adapter.release(model)
assert not any(m == "npu_hil" or m.startswith("npu_hil.") for m in sys.modules), "harness leaked"
print(json.dumps({
    "python": list(sys.version_info[:2]),
    "outputs": [[t.name, t.layout, t.dtype, list(t.shape), t.data.tobytes().hex()]
                for t in result.outputs],
    "inputs": [t.data.tobytes().hex() for t in result.inputs],
}))
"""


def _cases(
    tmp_path: Path, libs: dict[str, Path]
) -> dict[str, tuple[str, dict[str, Any], str, dict[str, Any]]]:
    """name -> (module, options, model file, input spec)."""
    (tmp_path / "m.rknn").write_text("FAKE-RKNN shape=1,3,4,5 channels=3 height=4 width=5")
    (tmp_path / "m.bin").write_text("FAKE-HBM shape=1,3,4,5 aligned=1,3,4,8 type=int8")
    (tmp_path / "m.hbm").write_text("FAKE-HBM")
    (tmp_path / "m.nef").write_text("FAKE-NEF channels=3 height=4 width=5 layout=1W16C8B")
    rng = np.random.default_rng(38)
    logical = rng.integers(-128, 128, size=(1, 3, 4, 5), dtype=np.int8)

    def spec(
        data: np.ndarray, layout: str, pass_through: bool, name: str = "input"
    ) -> dict[str, Any]:
        return {
            "name": name,
            "hex": data.tobytes().hex(),
            "layout": layout,
            "shape": [1, 3, 4, 5],
            "dtype": "int8",
            "pass_through": pass_through,
        }

    nhwc = np.zeros((1, 4, 16, 3), np.int8)
    nhwc[:, :, :5, :] = logical.transpose(0, 2, 3, 1)
    strided = np.zeros((1, 3, 4, 32), np.int8)
    strided[..., :5] = logical
    return {
        "rknnlite": ("rknnlite", {}, "m.rknn", spec(logical, "NCHW", False)),
        "rknnlite_pass_through": ("rknnlite", {}, "m.rknn", spec(nhwc, "NHWC", True)),
        "rknn_native": (
            "rknn_native",
            {"library": str(libs["rknnrt"])},
            "m.rknn",
            spec(nhwc, "NHWC", True),
        ),
        "hobot": ("hobot", {}, "m.bin", spec(logical, "NCHW", False, "data")),
        "hobot_native_x3x5": (
            "hobot_native",
            {"abi": "x3x5", "library": str(libs["dnn_x3x5"])},
            "m.hbm",
            spec(strided, "strided", True, "data"),
        ),
        "hobot_native_s100": (
            "hobot_native",
            {"abi": "s100", "library": str(libs["dnn_s100"]), "ucp_library": str(libs["dnn_s100"])},
            "m.hbm",
            spec(strided, "strided", True, "data"),
        ),
        "kneron": (
            "kneron",
            {"kplus_library": str(libs["kplus"])},
            "m.nef",
            {
                **spec(rng.integers(0, 256, 320, dtype=np.uint8), "1W16C8B", True),
                "shape": [1, 3, 4, 5],
            },
        ),
    }


def _here(module: str, options: dict[str, Any], model: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The same job on this interpreter, through the package import."""
    adapter = importlib.import_module(f"npu_hil.harness.board.adapters.{module}").ADAPTER(options)
    handle = adapter.load(model)
    data = np.frombuffer(bytes.fromhex(spec["hex"]), dtype=np.uint8)
    tensor = InputTensor(
        spec["name"], data, spec["layout"], spec["shape"], spec["dtype"], spec["pass_through"]
    )
    result = adapter.run(handle, [tensor], None)
    adapter.release(handle)
    return {
        "outputs": [
            [t.name, t.layout, t.dtype, list(t.shape), t.data.tobytes().hex()]
            for t in result.outputs
        ],
        "inputs": [t.data.tobytes().hex() for t in result.inputs],
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        "rknnlite",
        "rknnlite_pass_through",
        "rknn_native",
        "hobot",
        "hobot_native_x3x5",
        "hobot_native_s100",
        "kneron",
    ],
)
def test_adapter_runs_on_python38(
    py38: str, fake_modules: Path, fake_libs: dict[str, Path], tmp_path: Path, case: str
) -> None:
    module, options, model, spec = _cases(tmp_path, fake_libs)[case]
    model_path = str(tmp_path / model)
    done = subprocess.run(
        [
            py38,
            "-I",
            "-c",
            BOARD_SCRIPT,
            str(AGENT_DIR),
            str(FAKES),
            module,
            json.dumps(options),
            model_path,
            json.dumps(spec),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    board = json.loads(done.stdout.strip().splitlines()[-1])
    assert board.pop("python") == [3, 8]
    assert board == _here(module, options, model_path, spec)
