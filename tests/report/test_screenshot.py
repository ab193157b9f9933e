"""report.html opened in a real headless Chromium and screenshotted (CI installs chromium)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from harness.report.records import TestRecord
from harness.report.writer import write_run

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)


@pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (CI installs it: apt-get install chromium)"
)
def test_report_renders_in_headless_chromium(
    sample_records: tuple[Path, list[TestRecord]], tmp_path: Path
) -> None:
    assert CHROMIUM is not None
    run_dir, records = sample_records
    write_run(run_dir, records, {"started": "2026-01-01T00:00:00Z"})
    png = tmp_path / "shot.png"
    profile = tmp_path / "profile"
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            f"--screenshot={png}",
            "--window-size=1280,2000",
            (run_dir / "report.html").resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert png.exists(), f"chromium wrote no screenshot (exit {proc.returncode}): {proc.stderr}"
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 2000)
    # a blank page compresses to a few kB; a rendered report with tables and a heatmap does not
    assert len(data) > 20_000, f"screenshot is only {len(data)} bytes"
