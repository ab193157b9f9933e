"""Fixtures for the vendor adapter tests: the fakes with the vendors' surface.

Python fakes (``fakes/rknnlite``, ``fakes/hobot_dnn``, ``fakes/kp``) are put on ``sys.path``; the C
fakes of ``librknnrt``, ``libdnn`` (two ABIs) and ``libkplus`` are compiled once per session with
the system C compiler, the way a board's library is a prebuilt ``.so``.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

FAKES = Path(__file__).parent / "fakes"
REPO = Path(__file__).resolve().parents[2]

C_FAKES = {
    "rknnrt": ("fake_rknnrt.c", []),
    "dnn_x3x5": ("fake_dnn.c", []),
    "dnn_s100": ("fake_dnn.c", ["-DFAKE_ABI_S100"]),
    "kplus": ("fake_kplus.c", []),
}


def find_compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="session")
def fake_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The C fakes as shared libraries: ``{"rknnrt": path, "dnn_x3x5": ..., ...}``."""
    cc = find_compiler()
    if cc is None:
        pytest.skip(
            "no C compiler (cc, gcc or clang; or $CC) on PATH: the ctypes fakes of librknnrt, "
            "libdnn and libkplus cannot be built"
        )
    out = tmp_path_factory.mktemp("fake_libs")
    libs = {}
    for name, (source, flags) in C_FAKES.items():
        target = out / f"libfake_{name}.so"
        cmd = [cc, "-shared", "-fPIC", "-O1", "-Wall", "-o", str(target), str(FAKES / source)]
        done = subprocess.run([*cmd, *flags], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stderr}"
        libs[name] = target
    return libs


def c_hooks(path: Path) -> Any:
    """The fake library itself (the same handle the adapter's ctypes.CDLL gets), for its test
    hooks and layout exports."""
    lib = ctypes.CDLL(str(path))
    lib.fake_sizeof.restype = ctypes.c_long
    lib.fake_sizeof.argtypes = [ctypes.c_char_p]
    lib.fake_offsetof.restype = ctypes.c_long
    lib.fake_offsetof.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return lib


@pytest.fixture
def layout_exports(fake_libs: dict[str, Path]) -> Callable[[str], Any]:
    """``layout_exports("rknnrt")``: a fake library with its fake_sizeof/fake_offsetof."""
    return lambda name: c_hooks(fake_libs[name])


@pytest.fixture
def rknnrt(fake_libs: dict[str, Path]) -> Iterator[Any]:
    lib = c_hooks(fake_libs["rknnrt"])
    lib.fake_rknn_set_fault.argtypes = [ctypes.c_char_p]
    lib.fake_rknn_set_soc.argtypes = [ctypes.c_char_p]
    lib.fake_rknn_set_attr.argtypes = [ctypes.c_int, ctypes.c_void_p]
    lib.fake_rknn_set_attr.restype = ctypes.c_int

    def reset() -> None:
        lib.fake_rknn_set_fault(None)
        lib.fake_rknn_set_soc(None)
        lib.fake_rknn_clear_attrs()

    reset()
    yield lib
    reset()


@pytest.fixture(params=["x3x5", "s100"])
def dnn(request: pytest.FixtureRequest, fake_libs: dict[str, Path]) -> Iterator[Any]:
    """The fake libdnn of one ABI; ``dnn.abi`` and ``dnn.path`` say which."""
    path = fake_libs[f"dnn_{request.param}"]
    lib = c_hooks(path)
    lib.fake_dnn_set_fault.argtypes = [ctypes.c_char_p]
    lib.fake_dnn_set_fault(None)
    lib.abi = request.param
    lib.path = path
    yield lib
    lib.fake_dnn_set_fault(None)


@pytest.fixture
def fake_modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The Python fakes importable as ``rknnlite``, ``hobot_dnn`` and ``kp``, with clean state."""
    monkeypatch.syspath_prepend(str(FAKES))
    import hobot_dnn.pyeasy_dnn as pyeasy
    import kp._fake
    import rknnlite.api

    for module in (rknnlite.api, pyeasy):
        module.FAULTS.clear()
    rknnlite.api.CALLS.clear()
    rknnlite.api.LOG.clear()
    monkeypatch.setattr(rknnlite.api, "SOC", "rk3588")
    pyeasy.QUIRKS.clear()
    kp._fake.reset()
    yield FAKES
    kp._fake.reset()


@pytest.fixture
def py38() -> str:
    """A Python 3.8 interpreter with numpy, the oldest the board side supports."""
    path = os.environ.get("NPU_HIL_PY38", "/root/.pyenv/versions/3.8.18/bin/python")
    if not Path(path).exists():
        pytest.skip(f"no Python 3.8 at {path} (set NPU_HIL_PY38 to one)")
    probe = subprocess.run(
        [path, "-c", "import numpy"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        pytest.skip(f"numpy is not installed for {path} (run: {path} -m pip install numpy)")
    return path
