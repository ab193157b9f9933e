"""The heatmap PNG and ``npu-hil diff``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.codec import get_layout
from npu_hil.harness.diff import diff_buffers
from npu_hil.harness.diff.heatmap import mismatch_grid, padded_channel_grid, render_heatmap
from tests.clirun import run_cli

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def faulty_case() -> tuple[object, np.ndarray, np.ndarray]:
    layout = get_layout("kl730", "16W1C8B", (1, 4, 6, 20), "int8")
    tensor = np.arange(layout.shape[1] * 6 * 20, dtype=np.int64).reshape(layout.shape)
    tensor = (tensor % 100).astype(np.int8)
    device = layout.pack(tensor)
    device[layout.offset_of((0, 2, 3, 7))] += 1
    device[layout.offset_of((0, 2, 3, 8))] += 1
    padding = np.flatnonzero(layout.padding_mask())
    device[padding[:4]] = 9
    return layout, tensor, device


def test_grid_counts_mismatches_and_dirty_padding_where_they_are() -> None:
    layout, tensor, device = faulty_case()
    report = diff_buffers(layout, tensor, device)  # type: ignore[arg-type]
    counts, dirty, per_panel = mismatch_grid(report, layout)  # type: ignore[arg-type]
    assert per_panel == 1
    assert counts.sum() == 2
    assert counts[2, 3, 7] == 1 and counts[2, 3, 8] == 1
    # The first padding bytes are the right-hand padding of row 0 of channel 0 (w = 20..31).
    assert dirty.sum() == 4
    assert dirty[0, 0, 20:24].tolist() == [1, 1, 1, 1]
    assert counts.shape[2] >= 24


@pytest.mark.slow
def test_render_heatmap_writes_a_png(tmp_path: Path) -> None:
    layout, tensor, device = faulty_case()
    report = diff_buffers(layout, tensor, device)  # type: ignore[arg-type]
    out = render_heatmap(report, layout, tmp_path / "diff.png")  # type: ignore[arg-type]
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_many_channels_are_grouped_into_panels() -> None:
    layout = get_layout("kl730", "1W16C8B", (1, 100, 2, 3), "int8")
    tensor = np.zeros(layout.shape, np.int8)
    device = layout.pack(tensor)
    device[layout.offset_of((0, 99, 1, 2))] = 1
    report = diff_buffers(layout, tensor, device)
    counts, _, per_panel = mismatch_grid(report, layout)
    assert per_panel == 16
    assert counts.shape[0] == 7
    assert counts[6, 1, 2] == 1


@pytest.mark.slow
def test_padded_channels_get_their_own_panels_with_dirty_bytes(tmp_path: Path) -> None:
    """NC1HWC2 stores 3 channels in a channel block: the padded channels are drawn, and a dirty
    byte there is marked in its panel, not folded into a real channel's."""
    layout = get_layout("rk3588", "NC1HWC2", (1, 3, 4, 5), "int8")
    tensor = np.zeros(layout.shape, np.int8)
    device = layout.pack(tensor).copy()
    pad = np.flatnonzero(layout.padding_mask())
    located = layout.locate_many(pad)
    in_channel_7 = pad[(located.index[:, 1] == 7) & (located.index[:, 2] == 2)][0]
    device[in_channel_7] = 5
    report = diff_buffers(layout, tensor, device, padding="zero")
    counts, dirty, _ = mismatch_grid(report, layout)
    assert counts.shape[0] == 3 and dirty.sum() == 0
    pad_dirty, first, per_panel = padded_channel_grid(report, layout)
    assert first == 3 and pad_dirty.shape[0] >= 1
    assert pad_dirty.sum() == 1
    assert pad_dirty[(7 - first) // per_panel, 2].sum() == 1
    out = render_heatmap(report, layout, tmp_path / "pad.png")
    assert out.read_bytes()[:8] == PNG_MAGIC


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``npu-hil diff ARGS`` in this process (tests/clirun.py)."""
    return run_cli("diff", *args)


@pytest.mark.slow
def test_cli_exit_codes_json_and_png(tmp_path: Path) -> None:
    layout, tensor, device = faulty_case()
    np.save(tmp_path / "ref.npy", tensor)
    (tmp_path / "good.bin").write_bytes(layout.pack(tensor).tobytes())  # type: ignore[attr-defined]
    (tmp_path / "bad.bin").write_bytes(device.tobytes())
    common = [
        "--target",
        "kl730",
        "--layout",
        "16W1C8B",
        "--shape",
        "1,4,6,20",
        "--dtype",
        "int8",
        "--expected",
        str(tmp_path / "ref.npy"),
    ]
    good = cli(*common, "--device", str(tmp_path / "good.bin"))
    assert good.returncode == 0, good.stderr
    assert "equal" in good.stdout
    bad = cli(
        *common, "--device", str(tmp_path / "bad.bin"), "--json", "--png", str(tmp_path / "d.png")
    )
    assert bad.returncode == 1, bad.stderr
    data = json.loads(bad.stdout)
    assert data["mismatched"] == 2
    assert data["dirty_padding_bytes"] == 4
    assert (tmp_path / "d.png").read_bytes()[:8] == PNG_MAGIC
    packed = cli(
        "--target",
        "kl730",
        "--layout",
        "16W1C8B",
        "--shape",
        "1,4,6,20",
        "--dtype",
        "int8",
        "--expected-bin",
        str(tmp_path / "good.bin"),
        "--device",
        str(tmp_path / "good.bin"),
    )
    assert packed.returncode == 0, packed.stderr


@pytest.mark.slow
def test_cli_bad_input_exits_2(tmp_path: Path) -> None:
    np.save(tmp_path / "ref.npy", np.zeros((1, 2), np.int8))
    (tmp_path / "d.bin").write_bytes(b"\0")
    done = cli(
        "--target",
        "kl730",
        "--layout",
        "16W1C8B",
        "--shape",
        "1,4,6,20",
        "--dtype",
        "int8",
        "--expected",
        str(tmp_path / "ref.npy"),
        "--device",
        str(tmp_path / "d.bin"),
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "holds shape" in done.stderr
