"""A fourth vendor, written here in the tests and installed from outside the package through
the ``npu_hil.vendors`` entry-point group, runs through every stage without a line of
``npu_hil/harness/`` naming it: the codec (a layout, a report read back), the simulator (a model run
for its target, options, a fault), the oracle, the diff and its forensics, and the diff report.

The toy NPU keeps tensors in C order with each row (the last axis) padded to ``row_align``
elements (8 unless the device says otherwise) and quantizes to int8 with one affine scale.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from math import prod
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.codec import BlockedLayout, Dim, get_layout, known_targets, layout_names
from npu_hil.harness.codec.encodings import Encoding
from npu_hil.harness.codec.params import round_up
from npu_hil.harness.codec.reported import dtype_from_report, layout_from_report
from npu_hil.harness.diff import diff_buffers
from npu_hil.harness.diff.forensics import explain
from npu_hil.harness.errors import DeviceError, LayoutError
from npu_hil.harness.expect import expect_run
from npu_hil.harness.farm.decode import dequantize
from npu_hil.harness.models import build
from npu_hil.harness.sim import SimConfigError, SimInput, SimNpu
from npu_hil.harness.simkit.base import HeldInput, VendorSim, static_shape
from npu_hil.harness.simkit.graph import GraphInfo, TensorInfo
from npu_hil.harness.simkit.tensors import InputLike, SimTensor, input_dtype, logical_input
from npu_hil.targets import registry, tables_text
from npu_hil.targets.quant import Affine, Cast, Quantizer, choose_affine
from npu_hil.targets.registry import (
    BUILT_IN,
    ENTRY_POINT_GROUP,
    VendorPluginError,
    register,
    unit_for,
    units,
    unregister,
    vendor_of,
)
from npu_hil.targets.unit import SimOption, Vendor

TOY = "toy-1"
LAYOUT = "rows"
ROW_ALIGN = 8


def reload_vendors() -> None:
    """Load the entry-point group again (a distribution installed since)."""
    registry._LOADED.clear()
    registry.load_vendors()


def build_layout(
    target: str,
    name: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    role: str,
    params: dict[str, Any],
) -> BlockedLayout:
    align = int(params.pop("row_align", ROW_ALIGN))
    if params or align < 1:
        raise LayoutError(f"{target} {name}: unknown parameters {sorted(params)} or row_align")
    padded = (*shape[:-1], round_up(shape[-1], align))
    strides = [dtype.itemsize * prod(padded[axis + 1 :]) for axis in range(len(shape))]
    dims = tuple(
        Dim(axis, size, stride)
        for axis, (size, stride) in enumerate(zip(shape, strides, strict=True))
    )
    names = ("n", "c", "h", "w") if len(shape) == 4 else ()
    return BlockedLayout(
        target=target,
        name=name,
        role=role,
        shape=shape,
        dtype=dtype,
        dims=dims,
        nbytes=prod(padded) * dtype.itemsize,
        encoding=Encoding("raw", dtype),
        axis_names=names,
        params={"row_align": align},
        attributes={"row_align": align},
    )


def layouts() -> tuple[str, ...]:
    return (LAYOUT,)


class ToyReport:
    """The toy runtime reports ``{layout, shape, dtype, row_align, scale, zero}``."""

    def dtype(self, target: str, attributes: Mapping[str, Any]) -> np.dtype:
        return np.dtype(str(attributes["dtype"]))

    def layout(
        self,
        target: str,
        role: str,
        attributes: Mapping[str, Any],
        dtype: np.dtype,
        shape: tuple[int, ...] | None,
        *,
        reported: bool,
        params: dict[str, Any],
    ) -> BlockedLayout:
        logical = shape or tuple(int(d) for d in attributes["shape"])
        geometry = {"row_align": attributes["row_align"]} if reported else {}
        return get_layout(target, str(attributes["layout"]), logical, dtype, role=role, **geometry)


class ToyQuant:
    def quantizer(self, attributes: dict[str, Any]) -> Quantizer:
        if attributes["dtype"] == "int8":
            return Affine(int(attributes["zero"]), float(attributes["scale"]))
        return Cast(np.dtype(str(attributes["dtype"])))

    def model_input(self, attributes: dict[str, Any], held: np.ndarray) -> np.ndarray:
        values: np.ndarray = self.quantizer(attributes).dequantize(held).astype(np.float32)
        return values

    def output_quantizer(self, attributes: dict[str, Any]) -> Quantizer:
        return self.quantizer(attributes)


class ToyDecode:
    keys = "row_align, scale and zero"

    def claims(self, reported: Mapping[str, Any]) -> bool:
        return {"row_align", "scale", "zero"} <= set(reported)

    def dequantize(self, q: np.ndarray, reported: Mapping[str, Any], what: str) -> np.ndarray:
        out: np.ndarray = (q - float(reported["zero"])) * float(reported["scale"])
        return out


def attributes_of(layout: BlockedLayout, quant: Quantizer) -> dict[str, Any]:
    affine = quant if isinstance(quant, Affine) else None
    return {
        "layout": layout.name,
        "shape": list(layout.shape),
        "dtype": layout.dtype.name,
        "row_align": layout.params["row_align"],
        "scale": affine.scale if affine else 1.0,
        "zero": affine.zero_point if affine else 0,
    }


class ToySim(VendorSim):
    """The toy runtime: float inputs held as given, outputs int8 in padded rows."""

    def check_model(self, graph: GraphInfo) -> None:
        for info in graph.outputs:
            static_shape(info)

    def hold_input(self, index: int, info: TensorInfo, given: InputLike) -> HeldInput:
        dtype = input_dtype(given)
        shape = tuple(int(d) for d in given.shape)
        self.check_shape(info, shape)
        layout = self.layout(LAYOUT, shape, dtype, "input", "run", given.name)
        buffer, held = self.place(layout, given, logical_input(given)[0])
        attributes = attributes_of(layout, Cast(dtype))
        tensor = SimTensor(
            given.name, buffer, LAYOUT, dtype.name, list(shape), attributes, layout, "input"
        )
        return HeldInput(tensor, ToyQuant().model_input(attributes, held))

    def hold_output(
        self, index: int, info: TensorInfo, values: np.ndarray, graph: GraphInfo
    ) -> SimTensor:
        shape = static_shape(info, "run")
        layout = self.layout(LAYOUT, shape, np.dtype("int8"), "output", "run", info.name)
        quant = choose_affine(values)
        buffer = self.output_buffer(info.name, layout, quant.quantize(values))
        attributes = attributes_of(layout, quant)
        return SimTensor(
            info.name, buffer, LAYOUT, "int8", list(shape), attributes, layout, "output"
        )


def forensic_variants(
    name: str, role: str, shape: tuple[int, ...], dtype: np.dtype
) -> Iterator[tuple[dict[str, Any], str]]:
    for align in (1, 4, 16, 32):
        yield {"row_align": align}, f"rows padded to {align}"


def fault_variants(layout: BlockedLayout) -> Iterator[dict[str, Any]]:
    for align in (4, 16):
        if align != layout.params["row_align"]:
            yield {"row_align": align}


UNIT = Vendor(
    name="toyco",
    targets=(TOY,),
    build_layout=build_layout,
    layout_names=layouts,
    tables_text=lambda target: f"{target}: rows padded to {ROW_ALIGN} elements",
    report=ToyReport(),
    quant=ToyQuant(),
    decode=ToyDecode(),
    simulator=ToySim,
    sim_options={"flavour": SimOption("the toy flavour", ("plain", "spicy"))},
    forensic_variants=forensic_variants,
    fault_variants=fault_variants,
)


def install_vendor(folder: Path, name: str, value: str) -> None:
    """A distribution as pip leaves one in site-packages: its metadata and one entry point in
    the ``npu_hil.vendors`` group, found once ``folder`` is on the import path."""
    dist = folder / f"{name}_vendor-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-vendor\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{name} = {value}\n")


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Vendor]:
    """The toy vendor installed from outside the package, as any third-party vendor is: an entry
    point naming this module's ``UNIT``, loaded by the registry like the built-in three."""
    install_vendor(tmp_path, "toyco", f"{__name__}:UNIT")
    monkeypatch.syspath_prepend(str(tmp_path))
    reload_vendors()
    yield unit_for(TOY)
    unregister(UNIT.name)
    assert TOY not in known_targets()


def test_the_toy_vendor_comes_after_the_built_in_ones(toy: Vendor) -> None:
    assert [unit.name for unit in units()] == [*BUILT_IN, "toyco"]
    assert toy is UNIT


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("no_such_module_here:UNIT", "cannot be loaded: ModuleNotFoundError"),
        ("json:dumps", "expected a Vendor unit, got function"),
    ],
)
def test_a_broken_vendor_plugin_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, needle: str
) -> None:
    install_vendor(tmp_path, "broken", value)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(VendorPluginError, match="vendor plug-in 'broken'") as caught:
        reload_vendors()
    assert needle in caught.value.message and "broken-vendor 1.0" in caught.value.message
    monkeypatch.undo()
    reload_vendors()
    assert "broken" not in [unit.name for unit in units()]


def run(**options: Any) -> tuple[Any, dict[str, np.ndarray], Any]:
    model = build("conv3x3", (1, 3, 5, 7))
    given = {"input": np.random.default_rng(3).standard_normal((1, 3, 5, 7)).astype(np.float32)}
    npu = SimNpu(TOY, **options)
    result = npu.run(npu.load(model), [SimInput.logical("input", given["input"])])
    return model, given, result


def test_the_registry_knows_the_toy_vendor(toy: Vendor) -> None:
    assert vendor_of(TOY) == "toyco"
    assert unit_for(TOY) is toy
    assert TOY in known_targets()
    assert layout_names(TOY) == (LAYOUT,)
    assert tables_text(TOY).startswith(TOY)
    with pytest.raises(LayoutError, match="belong to another"):
        register(Vendor("imposter", (TOY,), build_layout, layouts, str))


def test_codec_lays_out_and_reads_back_the_toy_report(toy: Vendor) -> None:
    tensor = np.arange(2 * 3 * 5, dtype=np.int8).reshape(1, 2, 3, 5)
    layout = get_layout(TOY, LAYOUT, tensor.shape, "int8")
    assert layout.nbytes == 2 * 3 * 8
    packed = layout.pack(tensor)
    np.testing.assert_array_equal(layout.unpack(packed), tensor)
    attributes = {"layout": LAYOUT, "shape": [1, 2, 3, 5], "dtype": "int8", "row_align": 16}
    assert dtype_from_report(TOY, attributes) == np.dtype("int8")
    reported = layout_from_report(TOY, "output", attributes)
    assert reported.nbytes == 2 * 3 * 16


def test_sim_runs_a_model_and_the_oracle_and_diff_agree(toy: Vendor) -> None:
    model, given, result = run(flavour="spicy")
    inputs, outputs = expect_run(TOY, model, given, result.inputs, result.outputs)
    assert [e.name for e in outputs] == [t.name for t in result.outputs]
    for expected, device in zip(
        [*inputs, *outputs], [*result.inputs, *result.outputs], strict=True
    ):
        report = diff_buffers(expected.layout, expected.values, device.data)
        assert report.ok, report.summary()
        assert report.target == TOY


def test_sim_options_are_the_units(toy: Vendor) -> None:
    with pytest.raises(SimConfigError, match="flavour: the toy flavour"):
        SimNpu(TOY, precision="int8")
    with pytest.raises(SimConfigError, match="flavour must be one of plain, spicy"):
        SimNpu(TOY, flavour="mild")


def test_a_fault_is_caught_by_the_diff_and_explained_by_forensics(toy: Vendor) -> None:
    model, given, result = run(faults=["wrong-alignment"])
    _, outputs = expect_run(TOY, model, given, result.inputs, result.outputs)
    expected, device = outputs[0], result.outputs[0]
    report = diff_buffers(expected.layout, expected.values, device.data)
    assert not report.ok
    assert TOY in report.summary()
    explanation = explain(
        device.data, expected.values, TOY, role="output", declared=expected.layout
    )
    assert explanation.found
    assert explanation.best is not None and explanation.best.params == {"row_align": 16}


def test_a_real_boards_values_are_decoded_by_the_unit(toy: Vendor) -> None:
    _, _, result = run()
    output = result.outputs[0]
    stored = output.codec_layout.unpack(output.data)
    floats = dequantize(stored, output.attributes, "toy output")
    quant = ToyQuant().output_quantizer(output.attributes)
    np.testing.assert_allclose(floats, quant.dequantize(stored).astype(np.float32))
    with pytest.raises(DeviceError, match="or row_align, scale and zero; got"):
        dequantize(stored, {"nothing": 1}, "toy output")
