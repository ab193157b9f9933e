"""Preflight of a compiled model: its compatibility with a board of the target (the platform it
was built for, and the toolkit against the runtime version given), through the API and the
CLI's exit codes (0 passes, 1 refused, 2 a file that is not what its suffix claims)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from npu_hil.harness.errors import PreflightError
from npu_hil.harness.preflight import preflight
from tests.clirun import run_cli

DATA = Path(__file__).resolve().parents[1] / "data" / "artifacts" / "rockchip"
RK3588 = DATA / "probe-rk3588-i8.rknn"


def test_a_model_for_the_board_passes_and_says_what_is_unknown() -> None:
    report = preflight(RK3588, "rk3588")
    assert report.ok and [f.rule for f in report.findings] == ["compatibility"] * 2
    assert report.findings[0].message.startswith("target-platform: ok: ")
    assert report.findings[1].message.startswith(
        "runtime: unknown: the board reported no librknnrt"
    )
    assert "probe-rk3588-i8.rknn: rknn format 6, toolkit 2.5.0, built for rk3588" in report.notes
    assert any(n.startswith("runtime unknown: ") for n in report.notes)


def test_another_target_is_a_violation_and_an_older_runtime_a_warning() -> None:
    report = preflight(RK3588, "rk3566", board_versions={"api_version": "1.6.0"})
    assert not report.ok
    assert [f.message.split(":")[0] for f in report.violations] == ["target-platform"]
    older = [f for f in report.findings if f.message.startswith("runtime-not-older-than-toolkit")]
    assert older and "airockchip/rknn-toolkit2#254" in older[0].message
    assert "violates 1 rule(s)" in report.summary()


def test_a_damaged_artifact_cannot_be_analysed(tmp_path: Path) -> None:
    bad = tmp_path / "bad.rknn"
    bad.write_bytes(b"RKNX" + bytes(100))
    with pytest.raises(PreflightError, match=r"bad\.rknn: not a compiled RKNN model"):
        preflight(bad, "rk3588")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``npu-hil preflight ARGS`` in this process (tests/clirun.py)."""
    return run_cli("preflight", *args)


@pytest.mark.slow
def test_cli(tmp_path: Path) -> None:
    assert cli("--target", "rk3588", str(RK3588), "--runtime-version", "2.5.0").returncode == 0
    refused = cli("--target", "rk3566", str(RK3588), "--runtime-version", "1.6.0", "--json")
    assert refused.returncode == 1, refused.stderr
    assert json.loads(refused.stdout)["violations"] == 1  # the platform; the older runtime warns
    (tmp_path / "bad.rknn").write_bytes(b"nope")
    bad = cli("--target", "rk3588", str(tmp_path / "bad.rknn"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "not a compiled RKNN model" in bad.stderr + bad.stdout


def test_a_nef_and_a_horizon_model_report_what_cannot_be_read(tmp_path: Path) -> None:
    import struct
    import zlib

    content = struct.pack("<I", 8) + bytes(range(200))
    nef = tmp_path / "m.nef"
    nef.write_bytes(content + struct.pack("<I", zlib.crc32(content)))
    report = preflight(nef, "kl730", board_versions={"firmware": "2.2.0.0"})
    assert report.ok
    assert [f.message.split(":")[:2] for f in report.findings] == [
        ["target-platform", " unknown"],
        ["runtime", " unknown"],
    ]
    assert any(n.startswith("not read: target chip and toolchain version") for n in report.notes)
    model = tmp_path / "m.bin"
    model.write_bytes(b"\x01compiled")
    horizon = preflight(model, "rdk-x5")
    assert horizon.ok and "bayes-e" in horizon.findings[0].message
