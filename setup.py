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

setup(
    ext_modules=[
        Extension(
            "npu_hil.harness.codec._kernels",
            ["npu_hil/harness/codec/_kernels.c"],
            optional=True,
            extra_compile_args=_CFLAGS,
        )
    ]
)
