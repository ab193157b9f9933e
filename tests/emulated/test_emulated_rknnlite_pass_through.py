"""The ``rknnlite`` adapter's pass-through path and core masks against the real RKNNLite 2.5.0 on
an emulated RK3588: what reaches ``librknnrt`` is read back from the fake's trace
(``FAKE_RKNN_TRACE``: the ``rknn_inputs_set`` buffer exactly as RKNNLite handed it over, and every
``rknn_set_core_mask`` value), so the test sees the vendor layer's own conversions, not the
adapter's idea of them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.agent.protocol import InputSpec, JobSpec, Result
from npu_hil.harness.codec import get_layout
from npu_hil.harness.transport import LocalTransport
from npu_hil_testkit.emulated import EmulatedBoard

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

ZP, SCALE = -14, 0.5  # the fake librknnrt's built-in model: int8, zp -14, scale 0.5
RKNN_TENSOR_INT8 = 2


def model(folder: Path, c: int, h: int, w: int) -> Path:
    path = folder / f"identity-{c}x{h}x{w}.rknn"
    path.write_text(f"FAKE-RKNN channels={c} height={h} width={w}")
    return path


def run(
    board: EmulatedBoard, folder: Path, job: JobSpec, data: dict[str, np.ndarray]
) -> tuple[Result, list[str], Path]:
    trace = folder / "trace.txt"
    transport = LocalTransport(
        folder / "work", python=str(board.python), env={"FAKE_RKNN_TRACE": str(trace)}
    )
    with AgentClient(transport, margin_s=30) as client:
        result = client.submit(job, data)
    lines = trace.read_text().splitlines() if trace.exists() else []
    return result, lines, trace


def pass_through_job(path: Path, layout: str, shape: tuple[int, ...], **options: Any) -> JobSpec:
    return JobSpec(
        job_id=f"lite-{layout}",
        adapter="rknnlite",
        model=path,
        inputs=(InputSpec("input", layout, shape, "int8", pass_through=True),),
        adapter_options={"soc": "rk3588", **options},
        load_timeout_s=240,
        run_timeout_s=240,
    )


def dequantized(logical: np.ndarray) -> np.ndarray:
    return ((logical.astype(np.float32) - ZP) * SCALE).astype(np.float32)


def check_output(result: Result, logical: np.ndarray) -> None:
    assert result.ok, result.errors
    (out,) = result.outputs
    got = out.data.view(np.float32).reshape(logical.shape)
    np.testing.assert_array_equal(got, dequantized(logical))


def test_nhwc_pass_through_reaches_the_runtime_as_the_codec_packed_it(
    emulated_boards: dict[str, EmulatedBoard], tmp_path: Path
) -> None:
    """NHWC (C = 3): the codec packs rows of w_stride; RKNNLite is given the N, H, W, C array
    (rknn_inputs_set checks attr.size, rows of W) and hands the runtime those bytes unchanged,
    as INT8 with pass_through set; the fake lays them out to its own w_stride and copies them
    to the output, which comes back through rknn_outputs_get."""
    shape = (1, 3, 4, 5)
    logical = np.random.default_rng(11).integers(-128, 128, size=shape, dtype=np.int8)
    layout = get_layout("rk3588", "NHWC", shape, np.int8, role="input")
    packed = layout.pack(logical)
    w_stride = int(layout.attributes["w_stride"])
    job = pass_through_job(model(tmp_path, 3, 4, 5), "NHWC", shape)
    result, lines, trace = run(emulated_boards["rk3588"], tmp_path, job, {"input": packed})
    check_output(result, logical)
    assert lines == [f"inputs_set index=0 pass_through=1 type={RKNN_TENSOR_INT8} size=60"]
    rows = packed.reshape(1, 4, w_stride, 3)[:, :, :5, :]  # the codec's rows, padding dropped
    assert Path(f"{trace}.input0").read_bytes() == rows.tobytes()


def test_nc1hwc2_pass_through_reaches_the_runtime_as_the_codec_packed_it(
    emulated_boards: dict[str, EmulatedBoard], tmp_path: Path
) -> None:
    """NC1HWC2 (C = 17: two channel blocks of 16, the second mostly padding): RKNNLite is given
    the native bytes viewed 4-D, [N, C1 * H, W, C2] (it refuses the 5-D dims, below), and passes
    every byte the codec packed, padding included."""
    shape = (1, 17, 4, 5)
    logical = np.random.default_rng(12).integers(-128, 128, size=shape, dtype=np.int8)
    layout = get_layout("rk3588", "NC1HWC2", shape, np.int8, role="input")
    packed = layout.pack(logical)
    assert packed.nbytes == 2 * 4 * 5 * 16
    job = pass_through_job(model(tmp_path, 17, 4, 5), "NC1HWC2", shape)
    result, lines, trace = run(emulated_boards["rk3588"], tmp_path, job, {"input": packed})
    check_output(result, logical)
    assert lines == [f"inputs_set index=0 pass_through=1 type={RKNN_TENSOR_INT8} size=640"]
    assert Path(f"{trace}.input0").read_bytes() == packed.tobytes()


REFUSE = r"""
import numpy as np, sys
from rknnlite.api import RKNNLite
lite = RKNNLite()
assert lite.load_rknn(sys.argv[1]) == 0
assert lite.init_runtime() == 0
shape = [int(d) for d in sys.argv[2].split(",")]
out = lite.inference(inputs=[np.zeros(shape, np.int8)], data_type="int8", inputs_pass_through=[1])
print("RESULT", out)
"""


@pytest.mark.parametrize(
    ("channels", "shape", "rank"),
    [(3, (60,), 1), (17, (1, 2, 4, 5, 16), 5)],
    ids=["flat-nhwc", "5d-nc1hwc2"],
)
def test_the_real_rknnlite_refuses_a_pass_through_buffer_not_of_the_inputs_rank(
    emulated_boards: dict[str, EmulatedBoard],
    tmp_path: Path,
    channels: int,
    shape: tuple[int, ...],
    rank: int,
) -> None:
    """The bug the adapter had: a flat pass-through buffer; and the native 5-D NC1HWC2 dims,
    which the adapter sent next. RKNNLite 2.5.0 refuses both with its rank message (the model
    input's rank, 4), logs it and returns None, and nothing reaches the runtime."""
    trace = tmp_path / "trace.txt"
    board = emulated_boards["rk3588"]
    argv = [REFUSE, str(model(tmp_path, channels, 4, 5)), ",".join(map(str, shape))]
    done = subprocess.run(
        [str(board.python), "-c", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"PATH": "/usr/bin:/bin", "FAKE_RKNN_TRACE": str(trace)},
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-2000:]
    assert f"The input[0] need 4dims input, but {rank}dims input buffer feed." in output
    assert "RESULT None" in output
    assert not trace.exists() or "inputs_set" not in trace.read_text()


@pytest.mark.parametrize(("mask", "asked"), [("0_1_2", 7), ("all", 0xFFFF)])
def test_core_masks_on_rk3588_as_the_real_rknnlite_passes_them(
    emulated_boards: dict[str, EmulatedBoard], tmp_path: Path, mask: str, asked: int
) -> None:
    """``init_runtime(core_mask=...)`` with RKNNLite's own constants; what reaches
    ``rknn_set_core_mask`` is what the adapter reports as ``core_mask_effective``."""
    shape = (1, 3, 4, 5)
    x = (np.arange(60, dtype=np.float32).reshape(shape) - 30) / 4
    job = JobSpec(
        job_id=f"mask-{mask}",
        adapter="rknnlite",
        model=model(tmp_path, 3, 4, 5),
        inputs=(InputSpec("input", "NCHW", shape, "float32"),),
        adapter_options={"soc": "rk3588", "core_mask": mask},
        load_timeout_s=240,
        run_timeout_s=240,
    )
    result, lines, _ = run(emulated_boards["rk3588"], tmp_path, job, {"input": x})
    assert result.ok, result.errors
    masks = [int(line.split()[1]) for line in lines if line.startswith("core_mask ")]
    attributes = result.outputs[0].attributes
    assert attributes["core_mask"] == asked
    assert masks == [attributes["core_mask_effective"]]
