"""Build script for the optional compiled kernels; all metadata lives in pyproject.toml."""

from __future__ import annotations

import sys

from setuptools import Extension, setup

if sys.platform == "win32":
    _CFLAGS = ["/O2"]
else:
    # -fno-wrapv undoes CPython's -fwrapv for this module: with wrapping signed
    # arithmetic gcc cannot prove the strided index expressions linear and
    # leaves the interleave loops scalar.  No -march: the wheel must run on any
    # x86_64 / aarch64 machine (SSE2 / NEON baseline).
    _CFLAGS = ["-O3", "-fno-wrapv", "-std=gnu11"]

# The kernel takes buffers through the buffer protocol, which the stable ABI has from Python
# 3.11: built there, one abi3 wheel serves 3.11 and every later CPython; a 3.10 build is a wheel
# of its own.
_LIMITED = sys.version_info >= (3, 11)

setup(
    ext_modules=[
        Extension(
            "npu_hil.harness.codec._kernels",
            ["npu_hil/harness/codec/_kernels.c"],
            optional=True,
            extra_compile_args=_CFLAGS,
            py_limited_api=_LIMITED,
            define_macros=[("Py_LIMITED_API", "0x030B0000")] if _LIMITED else [],
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp311"}} if _LIMITED else {},
)
