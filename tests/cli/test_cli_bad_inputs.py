"""Every bad input to every ``npu-hil`` subcommand is exit 2 and one line: no traceback, no hang,
no huge allocation (the sweep of ``cli_bad_inputs``), checked through a fork per case
and, for a sample, as the separate process users run. The library refuses the same parameters
and files the command line does."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from cli_bad_inputs import ONE_GROUP, _state, all_cases, preload, run_case, write_inputs

from npu_hil.harness.codec import get_layout
from npu_hil.harness.codec.reported import layout_from_report
from npu_hil.harness.errors import LayoutError
from npu_hil.harness.files import InputFileError, load_npy, npy_bytes, read_regular
from npu_hil.harness.preflight import PreflightError, preflight

CASES = all_cases()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    preload()
    folder = write_inputs(tmp_path_factory.mktemp("bad-inputs") / "inputs")
    yield folder
    (folder / "kinds" / "unreadable").chmod(0o600)  # so the tmp folder can be removed


def test_the_sweep_covers_every_subcommand_with_hundreds_of_inputs() -> None:
    commands = {
        case.argv[0]
        + (" " + case.argv[1] if case.argv[0] in ("codec", "targets", "simfarm", "models") else "")
        for case in CASES
    }
    assert len(CASES) >= 500
    assert {
        "codec pack",
        "codec unpack",
        "codec describe",
        "codec locate",
        "diff",
        "preflight",
        "targets observed",
        "simfarm status",
        "simfarm down",
        "simfarm up",
        "nightly",
        "models build",
        "history",
        "soak",
    } <= commands


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_exit_2_and_one_line(case, root: Path) -> None:  # type: ignore[no-untyped-def]
    outcome = run_case(case.args(root), cwd=root)
    assert not outcome.hung, f"{case.id}: no answer in {outcome.seconds:.0f} s"
    assert not outcome.traceback, outcome.stderr
    assert outcome.code == 2, f"exit {outcome.code}: {outcome.stderr}"
    assert len(outcome.lines) == 1, outcome.stderr
    assert outcome.lines[0].startswith(("npu-hil: error: ", "npu-hil ", "usage:")), outcome.stderr


SAMPLE = [
    "pack-in[fifo]",
    "diff-device[sparse-20g]",
    "pack-npy[huge-shape]",
    "pack[rknn-out-nc1hwc2:native_dims=[1,1,100000,100000,16]]",
    "preflight[input-undefined-type:rk3588]",
    "simfarm-up-boards[100000000000000000000]",
]


@pytest.mark.slow
@pytest.mark.parametrize("case_id", SAMPLE)
def test_the_real_process_gives_exit_2_and_one_line(case_id: str, root: Path) -> None:
    """The same cases through ``python -m npu_hil.harness.cli.main``: the exit code and stderr users
    see, with a timeout for a hang."""
    case = next(c for c in CASES if c.id == case_id)
    done = subprocess.run(
        [sys.executable, "-m", "npu_hil.harness.cli.main", *case.args(root)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
        check=False,
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr


# ------------------------------------------------------------- the library refuses them too


@pytest.mark.parametrize(
    ("target", "layout", "shape", "dtype", "role", "params", "needle"),
    [
        ("rk3588", "NC1HWC2", (1, 16, 4, 4), "int8", "output", {"c2": 3}, "power of two"),
        ("rk3588", "NC1HWC2", (1, 16, 4, 4), "int8", "output", {"c2": 128}, "power of two"),
        ("rk3588", "NC1HWC2", (1, 16, 4, 4), "int8", "output", {"size": 1e300}, "can need"),
        ("rk3588", "NC1HWC2", (1, 16, 4, 4), "int8", "output", {"hw_align": 10**9}, "hw_align"),
        (
            "rk3588",
            "NC1HWC2",
            (1, 16, 4, 4),
            "int8",
            "output",
            {"native_dims": [1, 1, 100000, 100000, 16]},
            "can need",
        ),
        (
            "rk3588",
            "NHWC",
            (1, 16, 4, 4),
            "int8",
            "output",
            {"native_dims": [1, 4, 4, 10**11]},
            "can need",
        ),
        ("rk3588", "NCHW", (1, 16, 4, 4), "int8", "output", {"size": 99999999999}, "can need"),
        ("rk3588", "NHWC", (1, 3, 4, 4), "uint8", "input", {"w_stride": 10**11}, "can need"),
        ("rdk-x5", "strided", (1, 16, 4, 4), "int8", "output", {"aligned_byte_size": -1}, ">= 0"),
        (
            "rdk-x5",
            "strided",
            (1, 16, 4, 4),
            "int8",
            "output",
            {"aligned_byte_size": 10**15},
            "can need",
        ),
        (
            "rdk-x5",
            "strided",
            (1, 16, 4, 4),
            "int8",
            "output",
            {"aligned_shape": [1, 16, 100000, 100000]},
            "can need",
        ),
        (
            "kl730",
            "1W16C8B",
            (1, 16, 4, 4),
            "int8",
            "output",
            {"value_bits": 99999999},
            "value bits",
        ),
        (
            "kl730",
            "1W16C8BHL",
            (1, 16, 4, 4),
            "int16",
            "output",
            {"stride_npu": [1, 1, 10**8, 10**12]},
            "can need",
        ),
        ("kl730", "1W16C8B", (1, 16, 1, 10**17), "int8", "output", {}, "more than any"),
        ("kl730", "1W16C8B", (1, 16, 1, 1), [("a", "i1")], "output", {}, "element type"),
    ],
)
def test_get_layout_refuses_what_no_tensor_can_need(  # type: ignore[no-untyped-def]
    target, layout, shape, dtype, role, params, needle
) -> None:
    with pytest.raises(LayoutError, match=needle):
        get_layout(target, layout, shape, dtype, role=role, **params)


def test_the_bounds_leave_the_real_layouts_alone() -> None:
    """The most padding the seeds predict: one int8 channel padded to 32 (RK3588's output table
    for a last-layer conv), 32 times the tensor, well inside the bound."""
    big = get_layout("rk3588", "NC1HWC2", (1, 1, 1024, 1024), "int8", role="output")
    assert big.nbytes == 32 * 1024 * 1024
    small = get_layout("rk3588", "NC1HWC2", (1, 1, 1, 1), "int8", role="output")
    assert small.nbytes == 32 * 4  # the 1x1 plane rounded up to 4


def test_a_report_with_absurd_native_dims_is_refused_before_any_allocation() -> None:
    attributes = {
        "fmt": "NC1HWC2",
        "type": "INT8",
        "dims": [1, 1, 100000, 100000, 16],
        "n_dims": 5,
        "size": 160000000000,
    }
    with pytest.raises(LayoutError, match="can need"):
        layout_from_report("rk3588", "output", attributes, shape=(1, 16, 4, 4))


def test_a_report_with_c2_3_is_refused() -> None:
    attributes = {"fmt": 2, "type": 2, "dims": [1, 6, 4, 4, 3], "n_dims": 5, "size": 288}
    with pytest.raises(LayoutError, match="power of two"):
        layout_from_report("rk3588", "output", attributes, shape=(1, 16, 4, 4))


def test_load_npy_reads_what_np_save_writes(tmp_path: Path) -> None:
    for array in (
        np.arange(24, dtype=">i2").reshape(2, 3, 4),
        np.asfortranarray(np.eye(3)),
        np.array(True),
        np.zeros((0, 3), np.float16),
    ):
        np.save(tmp_path / "a.npy", array)
        loaded = load_npy(tmp_path / "a.npy")
        assert loaded.dtype == array.dtype and np.array_equal(loaded, array)
        assert loaded.flags.writeable


def test_an_npy_header_claiming_more_than_the_file_is_refused_by_size(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.zeros((1, 16, 1, 1), np.int8))
    data = (tmp_path / "a.npy").read_bytes().replace(b"(1, 16, 1, 1)", b"(1, 3, 100000, 100000)")
    with pytest.raises(InputFileError, match="30000000000 bytes"):
        npy_bytes(data, "a.npy")


def test_read_regular_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "f")
    with pytest.raises(InputFileError, match="a FIFO"):
        read_regular(tmp_path / "f", "a tensor", 100)
    with pytest.raises(InputFileError, match="a character device"):
        read_regular("/dev/zero", "a tensor", 100)
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(InputFileError, match="at most 100 bytes"):
        read_regular(tmp_path / "big", "a tensor", 100)


def test_preflight_refuses_a_model_it_cannot_analyse(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.UNDEFINED, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    with pytest.raises(PreflightError, match="not a numeric tensor"):
        preflight(helper.make_model(graph), "rk3588")
    with pytest.raises(PreflightError, match="no graph"):
        preflight(onnx.ModelProto(), "rk3588")


def test_one_group_is_the_tensor_of_the_cases() -> None:
    assert ONE_GROUP[-4:] == ["--shape", "1,16,1,1", "--dtype", "int8"]


def test_simfarm_up_refuses_an_absurd_board_count_before_the_lock(tmp_path: Path) -> None:
    from npu_hil_testkit.simfarm import farm
    from npu_hil_testkit.simfarm.errors import SimFarmError

    with pytest.raises(SimFarmError, match="1 to 64 boards"):
        farm.up(tmp_path / "farm", boards=10**20, targets=["rk3588"])
    assert not (tmp_path / "farm").exists(), "refused before the folder and its lock"


@pytest.mark.parametrize(
    "text",
    [
        _state(processes=["x"]),
        "[" * 100000 + "]" * 100000,
        _state(ports=[1, 2]),
        _state(processes=[{"name": "a", "pid": 10**30, "argv": ["x"], "start_time": 1}]),
    ],
)
def test_a_malformed_state_file_is_a_simfarm_error(text: str, tmp_path: Path) -> None:
    from npu_hil_testkit.simfarm.errors import SimFarmError
    from npu_hil_testkit.simfarm.state import load_state

    folder = tmp_path / "farm"
    folder.mkdir(mode=0o700)
    (folder / "state.json").write_text(text, encoding="utf-8")
    with pytest.raises(SimFarmError):
        load_state(folder)
