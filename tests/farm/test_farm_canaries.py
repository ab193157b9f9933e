"""Canaries through the real path (run_model on the default simulated farm): the agent fills the
buffers with the job's pattern, the simulated NPU writes over it, and bytes it never wrote come
back as ``unwritten``; the stale-result check flags an output that did not change between two
runs on different inputs. Each check fires with its fault and is quiet without it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_hil.harness.agent.protocol import Canary, JobSpec, Result
from npu_hil.harness.board.job import canary_for
from npu_hil.harness.errors import ProtocolError
from npu_hil.harness.farm import Farm
from npu_hil.harness.pipeline import ModelRun, run_model
from npu_hil.harness.pipeline.stale import derived_inputs

ROOT = Path(__file__).resolve().parents[2]
SHAPE = (1, 3, 5, 7)


@pytest.fixture(scope="module")
def sim_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    with Farm(ROOT / "inventory.yaml", workdir=tmp_path_factory.mktemp("farm")) as farm:
        yield farm


def image(seed: int = 0) -> dict[str, np.ndarray]:
    return {"input": np.random.default_rng(seed).integers(0, 256, SHAPE).astype(np.uint8)}


def run(
    farm: Farm, target: str = "rk3588", model: object = "conv3x3", **options: object
) -> ModelRun:
    (board,) = farm.boards(targets=[target])
    return run_model(farm.session(board), model, image(), **options)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("target", ["rk3588", "rdk-x5", "kl730"])
def test_a_clean_run_is_checked_against_its_canary_and_passes(sim_farm: Farm, target: str) -> None:
    shape_dtype = {"kl730": np.int8}
    (board,) = sim_farm.boards(targets=[target])
    x = image()["input"].astype(shape_dtype.get(target, np.uint8))
    result = run_model(sim_farm.session(board), "conv3x3", {"input": x})
    assert result.ok, result.summary()
    for tensor in result.tensors:
        # Filled and checked: the pattern is the job's, never a common fill.
        assert tensor.diff.canary is not None and len(bytes.fromhex(tensor.diff.canary)) == 8
        assert tensor.diff.unwritten_bytes == 0 and tensor.verdict == "equal"
        assert not tensor.diff.canary_note


def test_two_jobs_get_different_canaries(sim_farm: Farm) -> None:
    first, second = run(sim_farm), run(sim_farm)
    assert first.outputs[0].diff.canary != second.outputs[0].diff.canary


@pytest.mark.parametrize("target", ["rk3588", "rdk-x5", "kl730"])
def test_an_output_left_unwritten_is_caught_and_located(sim_farm: Farm, target: str) -> None:
    (board,) = sim_farm.boards(targets=[target])
    x = image()["input"].astype(np.int8 if target == "kl730" else np.uint8)
    result = run_model(
        sim_farm.session(board), "conv3x3", {"input": x}, faults=[{"name": "unwritten-output"}]
    )
    assert not result.ok
    assert all(t.ok for t in result.inputs)
    (out,) = result.outputs
    assert out.verdict == "unwritten", out.summary()
    diff = out.diff
    assert diff.unwritten_bytes > 0 and diff.unwritten_elements > 0
    # The NPU stopped early: one run of bytes up to the end of the buffer.
    (tail,) = diff.first_unwritten
    assert tail.offset + tail.count == diff.device_nbytes
    # Every reported byte holds the canary and differs from what the host expected.
    pattern = np.resize(np.frombuffer(bytes.fromhex(diff.canary or ""), np.uint8), out.data.size)
    offsets = diff.unwritten_offsets
    assert offsets is not None
    assert (out.data[offsets] == pattern[offsets]).all()
    assert diff.expected_buffer is not None
    assert (diff.expected_buffer[offsets] != pattern[offsets]).all()
    assert diff.mismatched == 0  # unwritten takes precedence over a plain mismatch
    assert "unwritten" in result.summary() and diff.canary in result.summary()


def test_unwritten_drop_bytes(sim_farm: Farm) -> None:
    result = run(sim_farm, faults=[{"name": "unwritten-output", "drop": 300}])
    (out,) = result.outputs
    assert out.verdict == "unwritten"
    (tail,) = out.diff.first_unwritten
    # Only bytes whose expected value is not the pattern's count: at most the 300 dropped.
    assert tail.offset + tail.count == out.diff.device_nbytes and out.diff.unwritten_bytes <= 300
    assert out.diff.unwritten_bytes >= 300 - 300 // 8


def test_stale_check_is_quiet_on_a_clean_board(sim_farm: Farm) -> None:
    result = run(sim_farm, stale_check=True)
    assert result.ok, result.summary()
    assert result.stale_check is not None and result.stale_check.ok
    (out,) = result.outputs
    assert not out.stale and not out.stale_note and out.verdict == "equal"
    # The second run really ran on other inputs, and gave other outputs.
    second = result.stale_check
    assert not np.array_equal(second.inputs[0].data, result.inputs[0].data)
    assert not np.array_equal(second.outputs[0].data, out.data)


def test_a_stale_output_is_flagged_by_name(sim_farm: Farm) -> None:
    result = run(sim_farm, faults=["stale-output"], stale_check=True)
    assert not result.ok
    (out,) = result.outputs
    assert out.verdict == "stale" and "'output'" in out.stale, out.summary()
    assert "stale" in result.summary()


def test_a_stale_device_alone_passes_its_first_job(sim_farm: Farm) -> None:
    # Why the check exists: the first job of a model on a stale runtime is right, and a later
    # one on the same inputs would be too; only different inputs show it.
    (board,) = sim_farm.boards(targets=["rk3588"])
    session = sim_farm.session(board)
    # Options of their own: a simulated runtime of its own, with no memory of other tests' runs.
    fault = [{"name": "stale-output", "tensors": ["output"]}]
    first = run_model(session, "conv3x3", image(), faults=fault)
    again = run_model(session, "conv3x3", image(), faults=fault)
    assert first.ok and again.ok
    other = run_model(session, "conv3x3", image(5), faults=fault)
    assert not other.ok and other.outputs[0].verdict == "different"


def test_a_result_filled_with_another_jobs_canary_is_refused(
    sim_farm: Farm, monkeypatch: pytest.MonkeyPatch
) -> None:
    (board,) = sim_farm.boards(targets=["rk3588"])
    session = sim_farm.session(board)
    submit = session.client.submit

    def other_jobs(spec: JobSpec, arrays: object) -> Result:
        result = submit(spec, arrays)  # type: ignore[arg-type]
        assert result.canary is not None
        return dataclasses.replace(result, canary=Canary(canary_for("another job"), True, True))

    monkeypatch.setattr(session.client, "submit", other_jobs)
    with pytest.raises(ProtocolError, match="canary"):
        run_model(session, "conv3x3", image())


def constant_model() -> onnx.ModelProto:
    """output = input * 0 + 1: an output that cannot depend on the input."""
    zero = numpy_helper.from_array(np.zeros((1,), np.float32), "zero")
    one = numpy_helper.from_array(np.ones((1,), np.float32), "one")
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["input", "zero"], ["t"]),
            helper.make_node("Add", ["t", "one"], ["output"]),
        ],
        "constant",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(SHAPE))],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, list(SHAPE))],
        [zero, one],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_an_output_that_cannot_depend_on_the_input_is_not_called_stale(sim_farm: Farm) -> None:
    result = run(sim_farm, model=constant_model(), stale_check=True)
    assert result.ok, result.summary()
    (out,) = result.outputs
    assert not out.stale and "does not depend on the input" in out.stale_note
    assert "stale check" in out.summary()


@pytest.mark.slow
def test_derived_inputs_differ_and_are_reproducible() -> None:
    given = {"a": np.full((2, 3), 7, np.uint8), "b": np.linspace(-1, 1, 12, dtype=np.float32)}
    second = derived_inputs(given)
    assert second.keys() == given.keys()
    for name in given:
        assert second[name].dtype == given[name].dtype and second[name].shape == given[name].shape
        assert not np.array_equal(second[name], given[name])
        assert np.array_equal(second[name], derived_inputs(given)[name])
