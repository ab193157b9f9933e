"""The documents' declared shapes (TypedDicts) held to the documents the agent, the board's
readers and the vendors' records really are: a key written and not declared, or declared as
always there and missing, fails here rather than passing the type checker by a cast."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import pytest

from npu_hil.harness.agent.client import HOST_ADAPTERS
from npu_hil.harness.agent.protocol import frame_job
from npu_hil.harness.board.adapters.hobot_native import HbPropertiesJson
from npu_hil.harness.board.adapters.rknn_native import RknnAttrJson
from npu_hil.harness.board.boardstate import read_board_state, read_identity, read_memory
from npu_hil.harness.board.documents import (
    BoardLogJson,
    BoardStateJson,
    CanaryJson,
    ErrorJson,
    IdentityJson,
    InputJson,
    JobJson,
    LogJson,
    MemoryJson,
    ResultJson,
    TensorJson,
    TimingsJson,
)
from npu_hil.harness.board.job import canary_for
from npu_hil.harness.board.wire import EXIT_OK, EXIT_REFUSED
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.horizon.quant import TensorProperties
from npu_hil.targets.rockchip.quant import RknnTensorAttr, quantizer, rknn_attr_of
from tests.agent.jobs import cache_model, run_once, sim_job

pytestmark = pytest.mark.slow


def fits(document: Mapping[str, object], declared: type, where: str) -> None:
    keys = set(document)
    required = set(declared.__required_keys__)  # type: ignore[attr-defined]
    optional = set(declared.__optional_keys__)  # type: ignore[attr-defined]
    assert required <= keys, f"{where}: missing {sorted(required - keys)}"
    assert keys <= required | optional, f"{where}: undeclared {sorted(keys - required - optional)}"


def test_a_sim_job_and_its_result_have_the_declared_keys(tmp_path: Path) -> None:
    spec, inputs = sim_job(tmp_path, "doc-job", "rk3588")
    spec = dataclasses.replace(spec, canary=canary_for("doc-job"), runtime_log_level=3)
    document, _ = frame_job(spec, inputs, cache_model(tmp_path / "host", spec.model))
    fits(document, JobJson, "job")
    for item in document["inputs"]:
        fits(item, InputJson, "job.inputs[]")

    shot = run_once(
        tmp_path / "board", spec, inputs, "--adapters", str(HOST_ADAPTERS), adapters=False
    )
    assert shot.status == EXIT_OK, shot.stderr
    assert shot.response is not None
    result = shot.response["result"]
    fits(result, ResultJson, "result")
    fits(result["timings"], TimingsJson, "result.timings")
    fits(result["canary"], CanaryJson, "result.canary")
    fits(result["board_log"], BoardLogJson, "result.board_log")
    for name in ("kernel", "runtime"):
        fits(result["board_log"][name], LogJson, f"result.board_log.{name}")
    tensors = result["inputs"] + result["outputs"]
    assert tensors
    for tensor in tensors:
        fits(tensor, TensorJson, "result tensor")
        # The simulated board reports what an RKNN runtime does: the record the unit reads.
        fits(tensor["attributes"], RknnTensorAttr, "result tensor attributes")


def test_a_refused_job_gives_a_declared_error_record(tmp_path: Path) -> None:
    spec, inputs = sim_job(tmp_path, "refused", "rk3588")
    shot = run_once(tmp_path / "board", dataclasses.replace(spec, adapter="nosuch"), inputs)
    assert shot.status == EXIT_REFUSED
    (record,) = shot.errors
    fits(record, ErrorJson, "error")
    assert (record["field"], record["reason"]) == ("adapter", "adapter")


def test_the_boards_readings_have_the_declared_keys() -> None:
    # This machine's own /sys and /proc: the readers run as on a board.
    state = read_board_state()
    fits(state, BoardStateJson, "board state")
    memory = read_memory()
    fits(memory, MemoryJson, "memory")
    fits(read_identity(), IdentityJson, "identity")


def test_the_adapters_records_are_the_ones_the_units_read() -> None:
    # The board cannot import the vendor units: two declarations of one record, kept as one.
    assert set(RknnAttrJson.__annotations__) == set(RknnTensorAttr.__annotations__)
    assert set(HbPropertiesJson.__required_keys__) <= set(TensorProperties.__annotations__)
    assert set(HbPropertiesJson.__optional_keys__) <= set(TensorProperties.__annotations__)


def test_a_record_with_a_field_of_another_type_is_a_layout_error() -> None:
    record = {"type": "INT8", "qnt_type": "AFFINE_ASYMMETRIC", "zp": "-3", "scale": 0.5}
    with pytest.raises(LayoutError, match=r"rknn_tensor_attr: zp '-3' is not"):
        quantizer(record)
    with pytest.raises(LayoutError, match="expected a mapping"):
        rknn_attr_of([("zp", 1)])  # type: ignore[arg-type]
