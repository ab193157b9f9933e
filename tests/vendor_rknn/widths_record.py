"""Measure where rknn-toolkit2 stops building a first-layer 3x3 convolution as the input widens,
per Rockchip target group, and keep it as test data: ``tests/data/zoo/rknn_widths.json.gz``.

    python tests/vendor_rknn/widths_record.py [--out FILE] [--targets a,b] [--parallel 2]

Run where the ``rknn`` extra and the toolkit are installed (the ``vendor-rknn`` tox env). The
model is the reference ``conv3x3`` (3 input channels, 16 output channels) on a 1x3xHxW input (H 1,
as the shipped suite's width check, and 8) at the target's default precision. A grid of widths
around the seed's limits is compiled first; where it shows a step from built to refused, the
boundary is bisected to the last width that builds.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from measured import widths_document_of
from rknn_probe import probe, probe_job

from npu_hil.harness.models import build
from npu_hil.targets.rockchip.compiler.build import (
    TOOLKIT,
    BuildJob,
    toolkit_version,
)
from npu_hil.targets.rockchip.measuredwidths import DATA

TARGETS = ("rk3566", "rk3588", "rk3562", "rk3576", "rv1106", "rv1106b", "rk2118")
"""One target per platform group, as the zoo (tests/vendor_rknn/zoo_record.py)."""
GRID = (2389, 2390, 4095, 4096, 6144, 6145, 8192, 16383, 16384)
"""The seed's limits for this convolution (rule A and B of the platforms) and the powers of two
around them."""
OUT = Path(__file__).resolve().parents[1] / "data" / "zoo" / "rknn_widths.json.gz"
PACKAGE_DATA = DATA
CHANNELS_OUT = 16
HEIGHTS = (1, 8)


def _job(folder: Path, target: str, height: int, width: int) -> BuildJob:
    proto = build("conv3x3", (1, 3, height, width), out_channels=CHANNELS_OUT)
    # Calibration values do not move a width boundary.
    sample = np.random.default_rng(width).standard_normal((1, 3, height, width))
    key = f"conv3x3-h{height}-w{width}"
    return probe_job(folder, key, proto, target, sample.astype(np.float32))


def _built(
    folder: Path, target: str, height: int, widths: Sequence[int], parallel: int
) -> list[dict[str, Any]]:
    jobs = [_job(folder, target, height, w) for w in widths]
    return [
        {
            "target": target,
            "precision": job.precision,
            "height": height,
            "width": int(job.graph[job.inputs[0]][3]),
            "built": reason is None,
            "reason": reason,
        }
        for job, reason in zip(jobs, probe(jobs, parallel), strict=True)
    ]


def _bisect(
    folder: Path, target: str, height: int, good: int, bad: int, parallel: int
) -> list[dict[str, Any]]:
    """Records of the widths tried between ``good`` (builds) and ``bad`` (refused) until they
    are adjacent."""
    tried = []
    while bad - good > 1:
        middle = (good + bad) // 2
        (record,) = _built(folder, target, height, [middle], parallel)
        tried.append(record)
        good, bad = (middle, bad) if record["built"] else (good, middle)
    return tried


def measure(targets: Sequence[str], heights: Sequence[int], parallel: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="npu-hil-widths-") as scratch:
        folder = Path(scratch)
        for target in targets:
            for height in heights:
                grid = _built(folder, target, height, GRID, parallel)
                records += grid
                refused = [r["width"] for r in grid if not r["built"]]
                below = [
                    r["width"] for r in grid if r["built"] and refused and r["width"] < min(refused)
                ]
                if below:
                    records += _bisect(folder, target, height, max(below), min(refused), parallel)
                print(f"{target} height {height}: {len(records)} records", file=sys.stderr)
    return sorted(records, key=lambda r: (TARGETS.index(r["target"]), r["height"], r["width"]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--heights", default=",".join(map(str, HEIGHTS)))
    parser.add_argument("--package", type=Path, default=PACKAGE_DATA)
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args(argv)
    heights = [int(h) for h in args.heights.split(",")]
    records = measure(args.targets.split(","), heights, args.parallel)
    document = {
        "provenance": {
            "compiler": f"{TOOLKIT} {toolkit_version()}",
            "model": (
                f"reference model conv3x3 (npu_hil.harness.models.builders), 3 input channels, "
                f"{CHANNELS_OUT} output channels, input 1x3xHxW (H: "
                f"{', '.join(map(str, heights))}), default precision per target"
            ),
            "made_by": "python tests/vendor_rknn/widths_record.py (grid, then bisection)",
            "note": (
                "the width at which the compiler stops building a first-layer 3x3 convolution; "
                "npu_hil.targets.rockchip.measuredwidths keeps the boundaries beside the seed's "
                "rule"
            ),
        },
        "records": records,
    }
    with gzip.open(args.out, "wt", encoding="utf-8") as out:
        json.dump(document, out, indent=1)
    print(f"{len(records)} records -> {args.out}", file=sys.stderr)
    write_package_data(document, args.package)
    return 0


def package_provenance(document: dict[str, Any]) -> dict[str, Any]:
    return {
        "compiler": document["provenance"]["compiler"],
        "model": document["provenance"]["model"],
        "made_by": "python tests/vendor_rknn/widths_record.py",
        "records": "tests/data/zoo/rknn_widths.json.gz",
    }


def write_package_data(document: dict[str, Any], path: Path) -> None:
    """The limits the package reads (npu_hil.targets.rockchip.measuredwidths), derived from the
    records (tests/vendor_rknn/measured.py)."""
    derived = widths_document_of(document["records"], package_provenance(document))
    path.write_text(json.dumps(derived, indent=1) + "\n", encoding="utf-8")
    print(f"measured limits -> {path}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
