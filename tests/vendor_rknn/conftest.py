"""Rockchip's real compiler (rknn-toolkit2, the `rknn` extra): collected only by the
`vendor-rknn` tox env, which installs it and sets NPU_HIL_VENDOR_RKNN=1. A compiler that cannot be
run there is a skip that says why, and a failure on CI (CI=true)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

if os.environ.get("NPU_HIL_VENDOR_RKNN") != "1":
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def compiler() -> str:
    """The compiler's version; skips (fails on CI) when it cannot be imported."""
    from npu_hil.targets.rockchip.compiler.build import TOOLKIT_VERSION, probe, toolkit_version

    reason = probe()
    if reason is not None:
        message = f"Rockchip's compiler cannot run here: {reason}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI must run tests/vendor_rknn)", pytrace=False)
        pytest.skip(message)
    version = toolkit_version()
    assert version == TOOLKIT_VERSION, f"tests/vendor_rknn are held to {TOOLKIT_VERSION}"
    return f"rknn-toolkit2 {version}"


@pytest.fixture(scope="session")
def grid(compiler: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from grid import compile_grid

    yield compile_grid(Path(tmp_path_factory.mktemp("rknn-grid")))
