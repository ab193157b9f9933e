"""The artifact reader held to files the real compiler writes now: the probe model of
tests/data/artifacts built for a full-format and a mini-format target, and for the two targets
the table says share one program, read back and checked against a board of each target."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from npu_hil.targets.compatibility import check_compatibility
from npu_hil.targets.rockchip.artifact import read_rockchip_model
from npu_hil.targets.rockchip.compiler.build import TOOLKIT_VERSION, BuildJob, build_one

PROBE = Path(__file__).resolve().parents[1] / "data" / "artifacts" / "rockchip" / "probe.onnx"
FORMATS = {
    "rk3588": ("rknn", 6),
    "rk3566": ("rknn", 6),
    "rk3568": ("rknn", 6),
    "rv1106": ("rknn-mini", 0x1004),
}


@pytest.fixture(scope="module")
def built(compiler: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("probe")
    sample = out / "sample.npy"
    np.save(sample, np.random.default_rng(0).standard_normal((1, 3, 4, 8)).astype(np.float32))
    files = {}
    for target in FORMATS:
        job = BuildJob(
            key=f"probe-{target}",
            onnx=PROBE,
            target=target,
            precision="int8",
            rknn=out / f"probe-{target}.rknn",
            graph={"input": (1, 3, 4, 8), "output": (1, 4, 4, 8)},
            inputs=("input",),
            dataset=({"input": sample},),
        )
        result = build_one(job)
        assert not hasattr(result, "reason"), getattr(result, "message", "")
        files[target] = job.rknn
    return files


@pytest.mark.parametrize("target", sorted(FORMATS))
def test_the_compiler_writes_what_the_reader_reads(built: dict[str, Path], target: str) -> None:
    info = read_rockchip_model(built[target])
    assert (info.format, info.format_version) == FORMATS[target]
    assert info.toolkit_version == TOOLKIT_VERSION
    assert info.compiler_version is not None and info.compiler_version.startswith(TOOLKIT_VERSION)
    assert info.target_platforms == (target,)
    assert "trailing_bytes" not in info.extras
    found = {
        f.check: f.status
        for f in check_compatibility(info, target, {"api_version": TOOLKIT_VERSION})
    }
    assert found == {"target-platform": "ok", "runtime": "ok"}


def test_the_shared_program_of_rk3566_and_rk3568(built: dict[str, Path]) -> None:
    a, b = built["rk3566"].read_bytes(), built["rk3568"].read_bytes()
    assert len(a) == len(b)
    differing = [k for k in range(len(a)) if a[k] != b[k]]
    # The platform name twice (model data and model info), and a few bytes of uninitialised
    # memory that also differ between two builds of one target: never more than a handful.
    assert 2 <= len(differing) < 64
    info = read_rockchip_model(built["rk3566"])
    assert {f.check: f.status for f in check_compatibility(info, "rk3568", {})}[
        "target-platform"
    ] == "warn"
