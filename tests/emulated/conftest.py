"""Emulated aarch64 boards for the adapters' tests: the Debian arm64 root (built once, cached in
the user's cache folder), rknn-toolkit-lite2 2.5.0's aarch64 wheel from the package registry,
and the project's C fakes cross-compiled for aarch64, put together as one board per SoC.

They run in ``tox -e board-aarch64`` (which sets ``NPU_HIL_EMULATED=1``); other runs skip them,
so the main suite does not build a root. There, whatever is missing (qemu-user, mmdebstrap, the
cross compiler, the registry) skips them with the reason, and fails them under CI (``CI=true``),
where ``.ci/run`` installs all of it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from npu_hil_testkit.emulated import (
    EmulatedBoard,
    EmulationError,
    build_root,
    cache_dir,
    make_board,
)

FAKES = Path(__file__).resolve().parents[1] / "adapters" / "fakes"
CROSS_CC = "aarch64-linux-gnu-gcc"
RKNNLITE = "rknn-toolkit-lite2==2.5.0"
BOARDS = {
    # name: (the SoC's device-tree compatible strings, qemu's CPU model of its big cores)
    "rk3588": (b"rockchip,rk3588-evb1-lp4-v10\0rockchip,rk3588\0", "cortex-a76"),
    "rv1106": (b"rockchip,rv1106g-evb\0rockchip,rv1106\0", "cortex-a53"),
}


@pytest.fixture(autouse=True)
def _only_when_asked() -> None:
    if os.environ.get("NPU_HIL_EMULATED") != "1":
        pytest.skip("emulated aarch64 boards run in tox -e board-aarch64 (NPU_HIL_EMULATED=1)")


def unavailable(reason: str) -> None:
    """A missing piece of the emulated boards: a failure under CI, a skip elsewhere."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"emulated boards: {reason}", pytrace=False)
    pytest.skip(f"emulated boards: {reason}")


def cross_compile(source: str, out: Path, *flags: str) -> Path:
    if shutil.which(CROSS_CC) is None:
        unavailable(f"no {CROSS_CC} (Debian packages gcc-aarch64-linux-gnu, libc6-dev-arm64-cross)")
    argv = [CROSS_CC, "-shared", "-fPIC", "-O1", "-Wall", "-o", str(out), str(FAKES / source)]
    done = subprocess.run([*argv, *flags], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        unavailable(f"{' '.join(argv)} failed:\n{done.stderr[-800:]}")
    return out


def host_compile(source: str, out: Path, *flags: str) -> Path:
    cc = shutil.which(os.environ.get("CC") or "cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the host build of the fakes")
    argv = [cc, "-shared", "-fPIC", "-O1", "-Wall", "-o", str(out), str(FAKES / source), *flags]
    subprocess.run(argv, check=True, capture_output=True)
    return out


def rknnlite_wheel(python: str) -> Path:
    """rknn-toolkit-lite2 2.5.0 for aarch64 and the root's Python, downloaded once."""
    tag = python.replace(".", "")[:3]
    folder = cache_dir() / "wheels"
    folder.mkdir(mode=0o700, exist_ok=True)
    found = sorted(folder.glob(f"rknn_toolkit_lite2-2.5.0-cp{tag}-*aarch64*.whl"))
    if found:
        return found[0]
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--platform",
        "manylinux2014_aarch64",
        "--platform",
        "manylinux_2_17_aarch64",
        "--python-version",
        tag,
        "--dest",
        str(folder),
        RKNNLITE,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    found = sorted(folder.glob(f"rknn_toolkit_lite2-2.5.0-cp{tag}-*aarch64*.whl"))
    if done.returncode != 0 or not found:
        unavailable(f"cannot download {RKNNLITE} for cp{tag} aarch64: {done.stderr[-600:]}")
    return found[0]


@pytest.fixture(scope="session")
def aarch64_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The C fakes built for aarch64 and, for comparison, for this machine."""
    out = tmp_path_factory.mktemp("aarch64_libs")
    return {
        "rknnrt": cross_compile("fake_rknnrt.c", out / "librknnrt.so"),
        "dnn_x3x5": cross_compile("fake_dnn.c", out / "libdnn_x3x5.so"),
        "dnn_s100": cross_compile("fake_dnn.c", out / "libdnn_s100.so", "-DFAKE_ABI_S100"),
        "host_rknnrt": host_compile("fake_rknnrt.c", out / "host_librknnrt.so"),
        "host_dnn_x3x5": host_compile("fake_dnn.c", out / "host_libdnn_x3x5.so"),
        "host_dnn_s100": host_compile("fake_dnn.c", out / "host_libdnn_s100.so", "-DFAKE_ABI_S100"),
    }


@pytest.fixture(scope="session")
def emulated_boards(
    tmp_path_factory: pytest.TempPathFactory, aarch64_libs: dict[str, Path]
) -> Iterator[dict[str, EmulatedBoard]]:
    """``{"rk3588": board, "rv1106": board}``: each with the real RKNNLite 2.5.0, the fake
    librknnrt at /usr/lib/librknnrt.so and libdnn at /usr/lib/libdnn.so (both for aarch64),
    and its SoC's /proc/device-tree/compatible and /dev/dri/renderD129."""
    try:
        root = build_root()
    except EmulationError as exc:
        unavailable(exc.message)
    wheel = rknnlite_wheel(root.python_version)
    boards = {}
    folder = tmp_path_factory.mktemp("emulated")
    for name, (compatible, cpu) in BOARDS.items():
        files: dict[str, bytes | Path] = {
            "/usr/lib/librknnrt.so": aarch64_libs["rknnrt"],
            "/usr/lib/libdnn.so": aarch64_libs["dnn_x3x5"],
            "/usr/lib/libdnn_s100.so": aarch64_libs["dnn_s100"],
            "/proc/device-tree/compatible": compatible,
            "/dev/dri/renderD129": b"",
        }
        dest = folder / name
        boards[name] = make_board(root, dest, files=files, wheels=[wheel], cpu=cpu)
    yield boards
