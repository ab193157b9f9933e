"""The C fake of librknnrt on the normal API RKNNLite 2.5.0 drives (``rknn_inputs_set``,
``rknn_run``, ``rknn_outputs_get``, ``rknn_outputs_release``), the symbols it must export for the
real RKNNLite to bind it, and its portability: plain C99 that builds warning-free on the host and
for the boards' ABIs (aarch64, armhf) where a cross compiler is there, so the real RKNNLite can be
run against it under emulation."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.board.adapters import rknn_native

# The librknnrt functions rknn-toolkit-lite2 2.5.0 looks up by name (the strings of its compiled
# rknn_runtime module, aarch64 cp311 wheel).
RKNNLITE_250_RESOLVES = (
    "rknn_init",
    "rknn_destroy",
    "rknn_query",
    "rknn_inputs_set",
    "rknn_run",
    "rknn_outputs_get",
    "rknn_outputs_release",
    "rknn_set_core_mask",
    "rknn_set_input_shapes",
)
# What rknn_native binds.
RKNN_NATIVE_BINDS = (
    "rknn_init",
    "rknn_query",
    "rknn_create_mem",
    "rknn_destroy_mem",
    "rknn_set_io_mem",
    "rknn_run",
    "rknn_destroy",
    "rknn_set_core_mask",
    "rknn_mem_sync",
)


class RknnInput(ctypes.Structure):
    """``rknn_input`` (rknn_api.h 2.3.2 field list)."""

    _fields_ = [
        ("index", ctypes.c_uint32),
        ("buf", ctypes.c_void_p),
        ("size", ctypes.c_uint32),
        ("pass_through", ctypes.c_uint8),
        ("type", ctypes.c_int),
        ("fmt", ctypes.c_int),
    ]


class RknnOutput(ctypes.Structure):
    """``rknn_output`` (rknn_api.h 2.3.2 field list)."""

    _fields_ = [
        ("want_float", ctypes.c_uint8),
        ("is_prealloc", ctypes.c_uint8),
        ("index", ctypes.c_uint32),
        ("buf", ctypes.c_void_p),
        ("size", ctypes.c_uint32),
    ]


def test_fake_exports_every_symbol_rknnlite_and_rknn_native_resolve(
    fake_libs: dict[str, Path],
) -> None:
    lib = ctypes.CDLL(str(fake_libs["rknnrt"]))
    missing = [n for n in (*RKNNLITE_250_RESOLVES, *RKNN_NATIVE_BINDS) if not hasattr(lib, n)]
    assert not missing


def test_normal_struct_layouts_agree_with_the_fake(layout_exports: Any) -> None:
    # Not in the measured facts file: held to the header's field lists through the fake.
    lib = layout_exports("rknnrt")
    for name, cls in (("rknn_input", RknnInput), ("rknn_output", RknnOutput)):
        assert lib.fake_sizeof(name.encode()) == ctypes.sizeof(cls), name


@pytest.fixture
def context(rknnrt: Any, tmp_path: Path) -> Any:
    ctx = rknn_native.rknn_context(0)
    blob = ctypes.create_string_buffer(b"FAKE-RKNN channels=3 height=2 width=5")
    rknnrt.rknn_init.argtypes = [
        ctypes.POINTER(rknn_native.rknn_context),
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_uint32,
        ctypes.c_void_p,
    ]
    assert rknnrt.rknn_init(ctypes.byref(ctx), blob, len(blob.value), 0, None) == 0
    ctx_type = rknn_native.rknn_context
    rknnrt.rknn_inputs_set.argtypes = [ctx_type, ctypes.c_uint32, ctypes.POINTER(RknnInput)]
    rknnrt.rknn_run.argtypes = [ctx_type, ctypes.c_void_p]
    rknnrt.rknn_outputs_get.argtypes = [
        ctx_type,
        ctypes.c_uint32,
        ctypes.POINTER(RknnOutput),
        ctypes.c_void_p,
    ]
    rknnrt.rknn_outputs_release.argtypes = [ctx_type, ctypes.c_uint32, ctypes.POINTER(RknnOutput)]
    rknnrt.rknn_destroy.argtypes = [ctx_type]
    yield ctx.value
    assert rknnrt.rknn_destroy(ctx.value) == 0


def set_input(lib: Any, ctx: int, data: np.ndarray, pass_through: int, type_: int, fmt: int) -> int:
    inp = RknnInput(0, data.ctypes.data, data.nbytes, pass_through, type_, fmt)
    return int(lib.rknn_inputs_set(ctx, 1, ctypes.byref(inp)))


def get_output(lib: Any, ctx: int, want_float: int) -> np.ndarray:
    out = RknnOutput(want_float, 0, 0, None, 0)
    assert lib.rknn_outputs_get(ctx, 1, ctypes.byref(out), None) == 0
    raw = ctypes.string_at(out.buf, out.size)
    assert lib.rknn_outputs_release(ctx, 1, ctypes.byref(out)) == 0
    return np.frombuffer(raw, dtype=np.float32 if want_float else np.int8).reshape(1, 3, 2, 5)


def test_pass_through_in_rows_of_w_and_float_outputs(rknnrt: Any, context: int) -> None:
    q = np.random.default_rng(0).integers(-128, 128, size=(1, 3, 2, 5), dtype=np.int8)
    nhwc = np.ascontiguousarray(q.transpose(0, 2, 3, 1))  # rows of W: attr.size bytes
    assert set_input(rknnrt, context, nhwc, 1, 2, 1) == 0
    assert rknnrt.rknn_run(context, None) == 0
    assert np.array_equal(get_output(rknnrt, context, 0), q)
    assert np.array_equal(get_output(rknnrt, context, 1), (q.astype(np.float32) + 14) * 0.5)


def test_pass_through_of_the_wrong_size_is_refused(rknnrt: Any, context: int) -> None:
    strided = np.zeros((1, 2, 16, 3), np.int8)  # rows of w_stride: size_with_stride bytes
    codes = {name: code for code, name in rknn_native.ERROR_NAMES.items()}
    assert set_input(rknnrt, context, strided, 1, 2, 1) == codes["RKNN_ERR_PARAM_INVALID"]


def test_logical_float_input_is_quantized(rknnrt: Any, context: int) -> None:
    x = (np.arange(30, dtype=np.float32).reshape(1, 3, 2, 5) - 14) * 0.5
    assert set_input(rknnrt, context, x, 0, 0, 0) == 0  # FLOAT32, NCHW
    assert rknnrt.rknn_run(context, None) == 0
    assert np.array_equal(get_output(rknnrt, context, 1), x)


# -- portability ----------------------------------------------------------------------------------

SOURCE = Path(__file__).parent / "fakes" / "fake_rknnrt.c"
STRICT = ["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-O1"]


def build(cc: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [cc, *STRICT, "-o", str(out), str(SOURCE)], capture_output=True, text=True, check=False
    )


@pytest.mark.slow
def test_host_build_is_warning_free(tmp_path: Path) -> None:
    cc = next((shutil.which(n) for n in ("cc", "gcc", "clang") if shutil.which(n)), None)
    if cc is None:
        pytest.skip("no C compiler on PATH")
    done = build(cc, tmp_path / "libfake.so")
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("triplet", ["aarch64-linux-gnu", "arm-linux-gnueabihf"])
def test_cross_build_exports_what_rknnlite_resolves(tmp_path: Path, triplet: str) -> None:
    cc = shutil.which(f"{triplet}-gcc")
    nm = shutil.which(f"{triplet}-nm") or shutil.which("nm")
    if cc is None or nm is None:
        pytest.skip(f"no {triplet}-gcc (and nm) on PATH")
    probe = tmp_path / "probe.c"
    probe.write_text("#include <stdint.h>\n#include <stdlib.h>\nint probe(void) { return 0; }\n")
    headers = subprocess.run(
        [cc, "-c", "-o", str(tmp_path / "probe.o"), str(probe)],
        capture_output=True,
        text=True,
        check=False,
    )
    if headers.returncode != 0:
        pytest.skip(f"{triplet}-gcc has no C library headers: {headers.stderr.strip()[:200]}")
    lib = tmp_path / f"libfake_rknnrt-{triplet}.so"
    done = build(cc, lib)
    assert done.returncode == 0, done.stderr
    symbols = subprocess.run(
        [nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True
    ).stdout.split()
    missing = sorted(set(RKNNLITE_250_RESOLVES + RKNN_NATIVE_BINDS) - set(symbols))
    assert not missing, f"{lib.name} lacks {missing}"


def test_a_model_in_the_rknn_container_loads_and_a_cut_one_does_not(rknnrt: Any) -> None:
    """The fake takes its text from the model data of a real-format ``.rknn`` container (what
    the emulated regression deploys, so the harness's artifact check reads it as a model)."""
    import struct

    text = b"FAKE-RKNN channels=3 height=2 width=5"
    info = b'{"target_platform": ["rk3588"]}'
    header = (b"RKNN" + bytes(4) + struct.pack("<QQ", 6, len(text))).ljust(64, b"\0")
    good = header + text + struct.pack("<Q", len(info)) + info
    cut = (b"RKNN" + bytes(4) + struct.pack("<QQ", 6, 1 << 20)).ljust(64, b"\0") + text
    rknnrt.rknn_init.argtypes = [
        ctypes.POINTER(rknn_native.rknn_context),
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_uint32,
        ctypes.c_void_p,
    ]
    rknnrt.rknn_destroy.argtypes = [rknn_native.rknn_context]
    for blob, expected in ((good, 0), (cut, -6)):  # RKNN_ERR_MODEL_INVALID
        ctx = rknn_native.rknn_context(0)
        data = ctypes.create_string_buffer(blob, len(blob))
        assert rknnrt.rknn_init(ctypes.byref(ctx), data, len(blob), 0, None) == expected
        if expected == 0:
            assert rknnrt.rknn_destroy(ctx.value) == 0
