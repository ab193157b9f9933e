"""The compiler child's job file is checked where the child reads it: a file that is not a job
stops the child with the file named, before the toolkit is asked anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npu_hil.targets.rockchip.compiler.child import read_job


def test_a_job_file_names_its_model_and_where_the_compiled_file_goes(tmp_path: Path) -> None:
    job = {
        "onnx": "/m.onnx",
        "rknn": "/out/m.rknn",
        "target": "rk3588",
        "precision": "int8",
        "dataset": None,
        "simulate": [],
    }
    path = tmp_path / "m.job.json"
    path.write_text(json.dumps(job), encoding="utf-8")
    assert read_job(path) == job


@pytest.mark.parametrize(
    "document",
    [["onnx", "rknn"], {"onnx": "/m.onnx", "rknn": "/m.rknn", "target": "rk3588"}, {"onnx": 1}],
)
def test_anything_else_is_refused_by_name(tmp_path: Path, document: object) -> None:
    path = tmp_path / "bad.job.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.job\.json: not a compile job"):
        read_job(path)
