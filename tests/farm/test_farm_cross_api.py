"""The cross-API check through the real path (run_model on the default simulated farm): the job
runs through the board's zero-copy path and the vendor's normal API, and an output the two
disagree on is its own finding (``cross-api``) naming both paths and the first differing
element; quiet on a clean run; not applicable for a vendor with one path."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.farm import Farm
from npu_hil.harness.models.builders import build
from npu_hil.harness.pipeline import ModelRun, run_model
from npu_hil.harness.sim import SimNpu
from npu_hil.harness.simkit.errors import SimConfigError
from npu_hil.harness.simkit.tensors import SimInput

ROOT = Path(__file__).resolve().parents[2]
SHAPE = (1, 3, 5, 7)  # W = 7: no target's input rows are 7 pixels apart
PATHS = {"rk3588": ("rknn_native", "rknnlite"), "rdk-x5": ("hobot_native", "hobot")}


@pytest.fixture(scope="module")
def sim_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    with Farm(ROOT / "inventory.yaml", workdir=tmp_path_factory.mktemp("farm")) as farm:
        yield farm


def image(target: str, shape: tuple[int, ...] = SHAPE) -> dict[str, np.ndarray]:
    dtype = np.int8 if target == "kl730" else np.uint8
    rng = np.random.default_rng(3)
    return {"input": rng.integers(0, 128, shape).astype(dtype)}


def run(farm: Farm, target: str, **options: object) -> ModelRun:
    (board,) = farm.boards(targets=[target])
    return run_model(farm.session(board), "conv3x3", image(target), **options)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(PATHS))
def test_a_clean_run_through_both_paths_is_quiet(sim_farm: Farm, target: str) -> None:
    result = run(sim_farm, target, cross_api=True)
    assert result.ok, result.summary()
    check = result.cross_api
    assert check is not None and check.applicable and not check.findings
    mine, other = PATHS[target]
    assert check.paths[0].startswith(mine) and check.paths[1].startswith(other)
    assert check.other_adapter == other
    for tensor in result.outputs:
        assert tensor.verdict == "equal" and not tensor.cross_api and not tensor.cross_api_note


@pytest.mark.parametrize("target", sorted(PATHS))
def test_the_unaligned_width_fault_is_caught_naming_both_paths_and_the_first_element(
    sim_farm: Farm, target: str
) -> None:
    # Without the check the zero-copy run is right: only the normal API misreads its rows.
    assert run(sim_farm, target, faults=["unaligned-width"]).ok
    result = run(sim_farm, target, faults=["unaligned-width"], cross_api=True)
    assert not result.ok
    (out,) = result.outputs
    assert out.verdict == "cross-api" and out.diff.ok, out.summary()
    mine, other = PATHS[target]
    finding = out.cross_api.split("; ")[0]
    assert f"{mine} (zero-copy" in finding and f"{other} (" in finding
    a, b = (re.escape(p) for p in result.cross_api.paths)  # type: ignore[union-attr]
    first = rf"the first at \[(\d+), (\d+), (\d+), (\d+)\] \(flat (\d+)\): {a} (\S+), {b} (\S+)$"
    match = re.search(first, finding)
    assert match is not None, finding
    index = tuple(int(g) for g in match.groups()[:4])
    # The element named is really the first that differs, with both values as decoded.
    ours = result.output("output", dequantize=target == "rk3588")
    assert 0 <= int(match.group(5)) < ours.size and index == np.unravel_index(
        int(match.group(5)), ours.shape
    )
    assert float(match.group(6)) == pytest.approx(float(ours[index]), rel=1e-5, abs=1e-5)
    assert float(match.group(6)) != pytest.approx(float(match.group(7)), rel=1e-5, abs=1e-5)
    assert "cross-api" in result.summary() and mine in result.summary()


def test_the_fault_on_the_zero_copy_path_fails_the_byte_diff_too(sim_farm: Farm) -> None:
    result = run(
        sim_farm,
        "rk3588",
        faults=[{"name": "unaligned-width", "path": "zero-copy"}],
        cross_api=True,
    )
    (out,) = result.outputs
    assert out.cross_api and not out.diff.ok
    assert out.verdict == "cross-api" and "byte diff: different" in out.summary()


@pytest.mark.slow
def test_kneron_has_one_path_and_says_so(sim_farm: Farm) -> None:
    result = run(sim_farm, "kl730", cross_api=True)
    assert result.ok, result.summary()
    check = result.cross_api
    assert check is not None and not check.applicable
    assert check.note == "not applicable (one API path: kneron)"
    assert all(t.cross_api_note == check.note for t in result.outputs)
    assert "not applicable (one API path" in result.summary()


def test_without_the_option_no_second_path_runs(sim_farm: Farm) -> None:
    result = run(sim_farm, "rk3588")
    assert result.cross_api is None and all(not t.cross_api_note for t in result.outputs)


def test_an_aligned_width_gives_the_fault_nothing_to_misread() -> None:
    """A width of 16 is the row stride itself: no path can misplace a row, and a fault that
    changes nothing is an error, never a silent no-op."""
    npu = SimNpu("rk3588", faults=["unaligned-width"], api_path="rknnlite")
    loaded = npu.load(build("conv3x3", (1, 3, 4, 16)))
    x = np.zeros((1, 3, 4, 16), np.uint8)
    with pytest.raises(SimConfigError, match="applies to no input"):
        npu.run(loaded, [SimInput.logical("input", x)])


@pytest.mark.slow
def test_an_unknown_api_path_is_refused() -> None:
    with pytest.raises(SimConfigError, match="rknn_native, rknnlite"):
        SimNpu("rk3588", api_path="nope")
