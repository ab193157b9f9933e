"""Declared preprocessing through the plugin: one test body for every SoC, the vendor's way of
taking the pixels kept in the record and the JUnit properties, and uint8 data for a model
declared normalized failing the test with the reason."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

INVENTORY = """\
boards:
  - {name: rv1106-01, target: rv1106, backend: sim, transport: local}
  - {name: kl730-01, target: kl730, backend: sim, transport: local}
  - {name: rdk-x5-01, target: rdk-x5, backend: sim, transport: local}
"""
TESTS = """
import numpy as np
import pytest
from npu_hil.harness.pipeline import Preprocessing
from npu_hil.harness.plugin import assert_run_ok

PIXELS = {"input": np.random.default_rng(0).integers(0, 256, (1, 3, 6, 7)).astype(np.uint8)}
IMAGENET = Preprocessing.pixels((123.675, 116.28, 103.53), (58.395, 57.12, 57.375))

@pytest.mark.soc("rv1106", "kl730", "rdk-x5")
def test_pixels(run_model):
    assert_run_ok(run_model("conv3x3", PIXELS, preprocessing=IMAGENET))

@pytest.mark.soc("rv1106")
def test_normalized_refuses_pixels(run_model):
    run_model("conv3x3", PIXELS, preprocessing=Preprocessing.normalized())
"""


@pytest.mark.slow
def test_declared_pixels_through_the_plugin(project: pytest.Pytester) -> None:
    project.makefile(".yaml", inventory=INVENTORY)
    project.makepyfile(TESTS)
    result = project.runpytest("--junitxml=junit.xml")
    result.assert_outcomes(passed=3, failed=1)
    (run_dir,) = [
        p for p in (project.path / "reports").iterdir() if p.is_dir() and not p.name.startswith(".")
    ]
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    said = {r["target"]: r["preprocessing"] for r in records if "test_pixels" in r["nodeid"]}
    assert "rknn-toolkit2's config(mean_values, std_values)" in said["rv1106"]
    assert "RGB/256 - 0.5 (SUB128, radix 8)" in said["kl730"]
    assert "hb_mapper's norm_type data_mean_and_scale" in said["rdk-x5"]
    failed = next(r for r in records if r["outcome"] == "failed")
    assert "normalized float input, got uint8 data" in failed["message"]
    junit = ET.parse(project.path / "junit.xml")
    said_in_junit = [
        p.get("value") for p in junit.iter("property") if p.get("name") == "npu_hil.preprocessing"
    ]
    assert len(said_in_junit) == 3 and all(said_in_junit)
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "RGB/256 - 0.5 (SUB128, radix 8)" in html
