"""The board side on emulated aarch64 boards: Debian's aarch64 python3 and numpy under qemu-user,
the real rknn-toolkit-lite2 2.5.0 (from the registry) and the project's fake runtimes
cross-compiled for aarch64. The agent, unchanged, runs jobs there through the local transport
and through a real sshd, as on a board.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.agent.protocol import InputSpec, JobSpec, Result
from npu_hil.harness.farm.inventory import load_inventory
from npu_hil.harness.farm.session import connect
from npu_hil.harness.transport import LocalTransport
from npu_hil.harness.transport.ssh import SshTransport
from npu_hil_testkit.emulated import EmulatedBoard
from npu_hil_testkit.simfarm import Sshd, start_sshd, stop_sshd
from npu_hil_testkit.simfarm.errors import SimFarmError

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

SHAPE = (1, 3, 4, 5)
ZP, SCALE = -14, 0.5  # the fake librknnrt's input and output quantization


def board_python(board: EmulatedBoard, code: str, *args: str) -> Any:
    done = subprocess.run(
        [str(board.python), "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("soc", ["rk3588", "rv1106"])
def test_the_board_runs_aarch64_python_and_the_real_rknnlite(
    emulated_boards: dict[str, EmulatedBoard], soc: str
) -> None:
    facts = board_python(
        emulated_boards[soc],
        "import json, platform, sys, numpy, rknnlite.api as api, importlib.metadata as md\n"
        "print(json.dumps({'machine': platform.machine(), 'python': sys.version_info[:2],"
        " 'numpy': numpy.__version__, 'rknnlite': api.__file__,"
        " 'version': md.version('rknn-toolkit-lite2'),"
        " 'compatible': open('/proc/device-tree/compatible', 'rb').read().decode('latin-1')}))",
    )
    assert facts["machine"] == "aarch64"
    assert facts["python"] == [3, 11]
    # The vendor's wheel, not the project's Python fake of it.
    assert facts["rknnlite"].startswith("/usr/local/lib/python3.11/dist-packages/rknnlite/")
    assert facts["version"] == "2.5.0"
    assert f"rockchip,{soc}" in facts["compatible"]


def rknn_model(folder: Path) -> Path:
    path = folder / "identity.rknn"
    path.write_text("FAKE-RKNN channels=3 height=4 width=5")
    return path


def quantized_identity(x: np.ndarray) -> np.ndarray:
    """What the fake runtime's int8 identity gives back for float input, dequantized: it adds the
    zero point before rounding, and rounds halves away from zero."""
    r = np.clip(x / SCALE + ZP, -128, 127)
    q = np.trunc(r + np.where(r < 0, -0.5, 0.5))
    return ((q - ZP) * SCALE).astype(np.float32)


def lite_job(model: Path, job_id: str, **options: Any) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        adapter="rknnlite",
        model=model,
        inputs=(InputSpec("input", "NCHW", SHAPE, "float32"),),
        adapter_options=options,
        load_timeout_s=240,
        run_timeout_s=240,
    )


X = (np.arange(60, dtype=np.float32).reshape(SHAPE) - 30) / 4


def check_lite(result: Result) -> None:
    assert result.ok, result.errors
    (out,) = result.outputs
    got = out.data.view(np.float32).reshape(SHAPE)
    np.testing.assert_array_equal(got, quantized_identity(X))


def run_lite(board: EmulatedBoard, folder: Path, **options: Any) -> Result:
    transport = LocalTransport(folder / "work", python=str(board.python))
    with AgentClient(transport, margin_s=30) as client:
        result = client.submit(lite_job(rknn_model(folder), "lite", **options), {"input": X})
        assert client.hello["python"].startswith("3.11.")
    return result


def test_rknnlite_normal_api_through_the_agent_on_rk3588(
    emulated_boards: dict[str, EmulatedBoard], tmp_path: Path
) -> None:
    result = run_lite(emulated_boards["rk3588"], tmp_path, soc="rk3588", core_mask="0_1_2")
    check_lite(result)
    assert result.versions["rknn_toolkit_lite2"] == "2.5.0"


def test_rknnlite_refuses_an_rv1106_board(
    emulated_boards: dict[str, EmulatedBoard], tmp_path: Path
) -> None:
    """Measured here: RKNNLite 2.5.0 finds no platform it knows in an RV1106's device tree
    ("Please specify the target in init_runtime!"), and refuses target="rv1106" by name; its
    targets are RK3562, RK3566, RK3568, RK3588, RK3576, RV1126B. An RV1106 has the C API only,
    so the adapter reports a DeviceError at init, not a result."""
    result = run_lite(emulated_boards["rv1106"], tmp_path, soc="rv1106")
    assert not result.ok
    (error,) = result.errors
    assert (error.type, error.stage, error.code) == ("DeviceError", "init", -1)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    try:
        process, info = start_sshd(tmp_path_factory.mktemp("sshd"))
    except SimFarmError as exc:
        pytest.skip(exc.message)
    try:
        yield info
    finally:
        stop_sshd(process)


def test_rknnlite_over_ssh_as_on_a_board(
    emulated_boards: dict[str, EmulatedBoard], sshd: Sshd, tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(sshd.known_hosts_line())
    transport = SshTransport(
        "127.0.0.1",
        sshd.port,
        sshd.user,
        workdir=str(tmp_path / "board"),
        key_file=str(sshd.client_key),
        known_hosts=str(known),
        user_known_hosts=None,
        python=str(emulated_boards["rk3588"].python),
        connect_timeout=10.0,
    )
    with AgentClient(transport, margin_s=30) as client:
        result = client.submit(lite_job(rknn_model(tmp_path), "ssh", soc="rk3588"), {"input": X})
    check_lite(result)


@pytest.mark.parametrize("soc", ["rk3588", "rv1106"])
def test_rknn_native_zero_copy_on_the_board_matches_this_machine(
    emulated_boards: dict[str, EmulatedBoard],
    aarch64_libs: dict[str, Path],
    tmp_path: Path,
    soc: str,
) -> None:
    """The zero-copy path through ctypes into the aarch64 build of the fake gives the same bytes
    and the same reported attributes as the x86_64 build here (struct layouts are LP64 on both)."""
    logical = np.random.default_rng(7).integers(-128, 128, size=SHAPE, dtype=np.int8)
    nhwc = np.zeros((1, 4, 16, 3), np.int8)
    nhwc[:, :, :5, :] = logical.transpose(0, 2, 3, 1)
    job = JobSpec(
        job_id="native",
        adapter="rknn_native",
        model=rknn_model(tmp_path),
        inputs=(InputSpec("input", "NHWC", SHAPE, "int8", pass_through=True),),
        adapter_options={"library": "/usr/lib/librknnrt.so", "soc": soc},
        load_timeout_s=240,
        run_timeout_s=240,
    )
    data = {"input": nhwc.reshape(-1).view(np.uint8)}
    board = emulated_boards[soc]
    with AgentClient(LocalTransport(tmp_path / "b", python=str(board.python)), margin_s=30) as c:
        there = c.submit(job, data)
    host_job = JobSpec(
        **{
            **job.__dict__,
            "adapter_options": {"library": str(aarch64_libs["host_rknnrt"]), "soc": soc},
        }
    )
    with AgentClient(LocalTransport(tmp_path / "h"), margin_s=30) as c:
        here = c.submit(host_job, data)
    assert there.ok, there.errors
    assert here.ok, here.errors
    assert [o.data.tobytes() for o in there.outputs] == [o.data.tobytes() for o in here.outputs]
    assert [o.attributes for o in there.outputs] == [o.attributes for o in here.outputs]


@pytest.mark.parametrize("abi", ["x3x5", "s100"])
def test_hobot_native_on_the_board_matches_this_machine(
    emulated_boards: dict[str, EmulatedBoard],
    aarch64_libs: dict[str, Path],
    tmp_path: Path,
    abi: str,
) -> None:
    """hobot_native through ctypes into the aarch64 fake libdnn of each ABI (X3/X5 and S100):
    the same bytes and attributes as the x86_64 build."""
    model = tmp_path / "m.hbm"
    model.write_text("FAKE-HBM")
    logical = np.random.default_rng(5).integers(-128, 128, size=SHAPE, dtype=np.int8)
    strided = np.zeros((1, 3, 4, 32), np.int8)
    strided[..., :5] = logical
    library = {"x3x5": "/usr/lib/libdnn.so", "s100": "/usr/lib/libdnn_s100.so"}[abi]

    def job(lib: str) -> JobSpec:
        options = {"abi": abi, "library": lib, **({"ucp_library": lib} if abi == "s100" else {})}
        return JobSpec(
            job_id=f"hobot-{abi}",
            adapter="hobot_native",
            model=model,
            inputs=(InputSpec("data", "strided", SHAPE, "int8", pass_through=True),),
            adapter_options=options,
            load_timeout_s=240,
            run_timeout_s=240,
        )

    data = {"data": strided.reshape(-1).view(np.uint8)}
    board = emulated_boards["rk3588"]  # any aarch64 board: the library is named explicitly
    with AgentClient(LocalTransport(tmp_path / "b", python=str(board.python)), margin_s=30) as c:
        there = c.submit(job(library), data)
    with AgentClient(LocalTransport(tmp_path / "h"), margin_s=30) as c:
        here = c.submit(job(str(aarch64_libs[f"host_dnn_{abi}"])), data)
    assert there.ok, there.errors
    assert here.ok, here.errors
    assert [o.data.tobytes() for o in there.outputs] == [o.data.tobytes() for o in here.outputs]
    assert [o.attributes for o in there.outputs] == [o.attributes for o in here.outputs]


def test_the_inventory_names_emulated_boards_by_their_python(
    emulated_boards: dict[str, EmulatedBoard], tmp_path: Path
) -> None:
    """tests/emulated/inventory.yaml: an emulated board is an ordinary board whose ``python:`` is
    its launcher; the farm's connect gives the agent that interpreter, which says aarch64."""
    folder = emulated_boards["rk3588"].dir.parent
    text = (Path(__file__).with_name("inventory.yaml")).read_text().replace("EMULATED", str(folder))
    path = tmp_path / "inventory.yaml"
    path.write_text(text)
    inventory = load_inventory(path)
    for board in inventory.boards:
        assert board.python == str(emulated_boards[board.target].python)
        assert not board.simulated
    board = inventory.board("rv1106-emu-01")
    nhwc = np.zeros((1, 4, 16, 3), np.uint8)
    job = JobSpec(
        job_id="inventory",
        adapter=board.adapter,
        model=rknn_model(tmp_path),
        inputs=(InputSpec("input", "NHWC", SHAPE, "int8", pass_through=True),),
        adapter_options={"library": "/usr/lib/librknnrt.so", "soc": board.target},
        load_timeout_s=240,
        run_timeout_s=240,
    )
    with AgentClient(connect(board, tmp_path / "farm"), margin_s=30) as client:
        result = client.submit(job, {"input": nhwc.reshape(-1)})
        assert client.hello["python"].startswith("3.11.")
    assert result.ok, result.errors
    assert result.versions["machine"] == "aarch64"
