"""Rockchip's real compiler (rknn-toolkit2, the `rknn` extra): collected only by the
`vendor-rknn` tox env, which installs it and sets NPU_HIL_VENDOR_RKNN=1. A compiler that cannot be
run there is a skip that says why, and a failure on CI (CI=true)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The zoo (tests/zoo) and its recorder (zoo_record.py) are imported by name.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "zoo"))

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


@pytest.fixture(scope="session")
def zoo_builds(compiler: str, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    """The zoo's variants (never stored) and three stored models, compiled afresh for one
    target per platform group, each also run on the toolkit's simulator."""
    from zoo_models import BUILDERS, VARIANTS
    from zoo_record import compile_zoo

    stored = ("mobilenet_v2", "ssd_boxes", "classifier_argmax")
    builders = {**VARIANTS, **{name: BUILDERS[name] for name in stored}}
    return compile_zoo(Path(tmp_path_factory.mktemp("rknn-zoo")), builders)
