"""Synthetic records for the report tests: a few boards, every outcome, a real heatmap."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.report.records import TensorFinding, TestRecord


def make_record(
    name: str,
    outcome: str,
    board: str = "rk3588-01",
    target: str = "rk3588",
    simulated: bool = True,
    **extra: object,
) -> TestRecord:
    return TestRecord(
        nodeid=f"tests/hil/test_layouts.py::test_roundtrip[{board}-{name}]",
        outcome=outcome,
        duration_s=0.25,
        board=board,
        target=target,
        backend="sim" if simulated else "hw",
        simulated=simulated,
        message="" if outcome == "passed" else f"{name} {outcome}",
        runtime_versions={"librknnrt": "2.3.2"},
        artifact_hashes={"model.onnx": "sha256:" + "ab" * 8},
        **extra,  # type: ignore[arg-type]
    )


def render_real_heatmap(path: Path) -> Path:
    """A heatmap from a real one-byte fault through the codec and the diff."""
    from npu_hil.harness.codec import get_layout
    from npu_hil.harness.diff import diff_buffers
    from npu_hil.harness.diff.heatmap import render_heatmap

    layout = get_layout("rk3588", "NC1HWC2", (1, 8, 4, 5), "int8")
    logical = np.arange(160, dtype=np.int8).reshape(1, 8, 4, 5)
    device = layout.pack(logical).copy()
    device[3] ^= 0x10
    report = diff_buffers(layout, logical, device.tobytes())
    return render_heatmap(report, layout, path)


@pytest.fixture
def sample_records(tmp_path: Path) -> tuple[Path, list[TestRecord]]:
    """A run folder holding a heatmap, and records over three boards with every outcome."""
    run_dir = tmp_path / "reports" / "20260101T000000Z-aaaaaa"
    run_dir.mkdir(parents=True)
    (run_dir / "heatmaps").mkdir()
    render_real_heatmap(run_dir / "heatmaps" / "out0.png")
    failing = TensorFinding(
        name="out0",
        role="output",
        verdict="different",
        summary="n=0, c=3, h=0, w=0: expected 60, got 44 at offset 3",
        heatmap="heatmaps/out0.png",
        attribute_findings=["w_stride: predicted 8, device reported 16"],
    )
    records = [
        make_record("a", "passed"),
        make_record("b", "failed", tensors=[failing], longrepr="AssertionError: buffers differ"),
        make_record("c", "error", board="kl730-01", target="kl730", boot_log="U-Boot 2023.04"),
        make_record("d", "skipped", board="kl730-01", target="kl730"),
        make_record("e", "passed", board="rdk-x5-01", target="rdk-x5", simulated=False),
    ]
    return run_dir, records
