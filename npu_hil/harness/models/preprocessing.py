"""A model's preprocessing, declared once (:class:`Preprocessing`): what its inputs are, and how
every vendor's board takes them (docs/model-developer/tests.md). :func:`prepare` makes the model
the board runs (the vendor's normalization in front) and the arrays it is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npu_hil.harness.errors import LayoutError
from npu_hil.targets.registry import unit_for
from npu_hil.targets.unit import PixelInput

__all__ = ["Prepared", "Preprocessing", "PreprocessingError", "prepare"]

_FLOAT_INPUTS = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE}


class PreprocessingError(LayoutError):
    """Inputs that do not match the declared preprocessing, or a declaration that does not fit
    the model: names the input, what was declared and what came. A LayoutError: the run fails
    before anything is sent."""


@dataclass(frozen=True)
class Preprocessing:
    """What a model's inputs are. ``form`` is ``"pixels"`` (uint8, normalized per channel as
    ``(pixel - mean) / std`` before the model) or ``"normalized"`` (float, given as the model
    takes it); ``mean`` and ``std`` are in pixel units (0-255), one per channel or one for all."""

    form: str
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()

    @classmethod
    def pixels(cls, mean: Sequence[float] = (0.0,), std: Sequence[float] = (1.0,)) -> Preprocessing:
        """uint8 pixels; the model computes on ``(pixel - mean) / std`` (ImageNet's, for
        example: mean 123.675, 116.28, 103.53 and std 58.395, 57.12, 57.375)."""
        return cls("pixels", tuple(float(m) for m in mean), tuple(float(s) for s in std))

    @classmethod
    def normalized(cls) -> Preprocessing:
        """Float input already normalized the way the model was trained."""
        return cls("normalized")

    def __post_init__(self) -> None:
        if self.form not in ("pixels", "normalized"):
            raise PreprocessingError(
                f"preprocessing: form is 'pixels' or 'normalized', got {self.form!r}"
            )
        if self.form == "normalized":
            if self.mean or self.std:
                raise PreprocessingError(
                    "preprocessing: normalized input takes no mean/std (declare pixels)"
                )
            return
        if not self.mean or len(self.mean) != len(self.std):
            raise PreprocessingError(
                f"preprocessing: pixels need as many std values as mean values, got mean "
                f"{list(self.mean)} and std {list(self.std)}"
            )
        bad = [s for s in self.std if not (np.isfinite(s) and s > 0)]
        if bad or not all(np.isfinite(m) for m in self.mean):
            raise PreprocessingError(
                f"preprocessing: std must be finite and above 0 and mean finite, got mean "
                f"{list(self.mean)} and std {list(self.std)}"
            )

    def normalize(self, pixels: np.ndarray) -> np.ndarray:
        """The float tensor the model computes on for uint8 ``pixels`` (N, C, H, W)."""
        mean, std = self.per_channel(pixels.shape[1])
        normalized: np.ndarray = ((pixels.astype(np.float32) - mean) / std).astype(np.float32)
        return normalized

    def per_channel(self, channels: int) -> tuple[np.ndarray, np.ndarray]:
        mean = np.asarray(self.mean, np.float32)
        std = np.asarray(self.std, np.float32)
        if mean.size == 1:
            mean, std = np.repeat(mean, channels), np.repeat(std, channels)
        return mean.reshape(1, -1, 1, 1), std.reshape(1, -1, 1, 1)

    def check(self, name: str, value: np.ndarray) -> None:
        """Refuses ``value`` for input ``name`` unless it is what this declaration takes."""
        if self.form == "normalized":
            if value.dtype.kind != "f":
                raise PreprocessingError(
                    f"input {name!r}: the model is declared to take normalized float input, "
                    f"got {value.dtype.name} data (values {_span(value)}); declare "
                    "Preprocessing.pixels(mean, std) to give pixels"
                )
            return
        if value.dtype != np.uint8 or value.ndim != 4:
            raise PreprocessingError(
                f"input {name!r}: declared pixels take uint8 (N, C, H, W), got "
                f"{value.dtype.name} {list(value.shape)}"
            )
        if len(self.mean) not in (1, value.shape[1]):
            raise PreprocessingError(
                f"input {name!r}: {len(self.mean)} mean/std values declared for "
                f"{value.shape[1]} channels (N, C, H, W: C is axis 1)"
            )


@dataclass(frozen=True)
class Prepared:
    """The model a board runs for declared preprocessing, the arrays it is given, and one line
    per input saying how the vendor takes it."""

    model: onnx.ModelProto
    inputs: dict[str, np.ndarray]
    notes: tuple[str, ...]


def prepare(
    target: str,
    declared: Preprocessing | Mapping[str, Preprocessing],
    model: onnx.ModelProto,
    inputs: Mapping[str, np.ndarray],
) -> Prepared:
    """The model and inputs for ``target``'s board: each input checked against its declaration
    (one for all inputs, or per input name), pixels turned into the vendor's input form and the
    rest of their normalization compiled into the model."""
    per_input = _declarations(declared, inputs)
    graph_inputs = {i.name: i for i in model.graph.input}
    pixel_input: PixelInput | None = None
    prepared = onnx.ModelProto()
    prepared.CopyFrom(model)
    arrays = dict(inputs)
    notes = []
    for name, value in inputs.items():
        how = per_input[name]
        how.check(name, value)
        if how.form == "normalized":
            continue
        graph_input = graph_inputs.get(name)
        if graph_input is None:
            raise PreprocessingError(
                f"input {name!r}: declared pixels, but the model has no input of that name "
                f"(it has {sorted(graph_inputs)})"
            )
        if graph_input.type.tensor_type.elem_type not in _FLOAT_INPUTS:
            raise PreprocessingError(
                f"input {name!r}: declared pixels, but the model's input is "
                f"{TensorProto.DataType.Name(graph_input.type.tensor_type.elem_type)}, not float: "
                "its normalization is already part of it (give what it takes, undeclared)"
            )
        if pixel_input is None:
            pixel_input = _pixel_input(target)
        dtype = np.dtype(pixel_input.dtype_for(target))
        arrays[name] = _board_values(pixel_input, dtype, value)
        _normalize_in_front(prepared, name, how, pixel_input, dtype, value.shape[1])
        notes.append(f"input {name!r}: {pixel_input.how}")
    return Prepared(prepared, arrays, tuple(notes))


def _declarations(
    declared: Preprocessing | Mapping[str, Preprocessing], inputs: Mapping[str, np.ndarray]
) -> dict[str, Preprocessing]:
    if isinstance(declared, Preprocessing):
        return {name: declared for name in inputs}
    unknown = sorted(set(declared) - set(inputs))
    missing = sorted(set(inputs) - set(declared))
    if unknown or missing:
        raise PreprocessingError(
            f"preprocessing: declared for {sorted(declared)}, the inputs given are "
            f"{sorted(inputs)}" + (f" (no declaration for {missing})" if missing else "")
        )
    return dict(declared)


def _pixel_input(target: str) -> PixelInput:
    unit = unit_for(target)
    if unit.pixel_input is None:
        raise PreprocessingError(
            f"{target}: vendor {unit.name} has no path for uint8 pixels with the normalization "
            "compiled in; give normalized float input"
        )
    return unit.pixel_input


def _board_values(pixel_input: PixelInput, dtype: np.dtype, pixels: np.ndarray) -> np.ndarray:
    """What the board's input holds for ``pixels``: the pixels themselves (in ``dtype``), or
    the vendor's fixed hardware template applied to them."""
    if dtype == np.uint8:
        return pixels
    values = (pixels.astype(np.float32) - pixel_input.offset) / pixel_input.divisor
    return values.astype(dtype)


def _normalize_in_front(
    model: onnx.ModelProto,
    name: str,
    how: Preprocessing,
    pixel_input: PixelInput,
    dtype: np.dtype,
    channels: int,
) -> None:
    """Input ``name`` takes the board's values; nodes in front turn them into the normalized
    tensor the original graph computed on: ``(b * divisor + offset - mean) / std``, one scale
    and one shift per channel (what a compiler folds into the first layer)."""
    graph = model.graph
    normalized = f"{name}__normalized"
    for node in graph.node:
        node.input[:] = [normalized if i == name else i for i in node.input]
    for output in graph.output:
        if output.name == name:
            raise PreprocessingError(f"input {name!r} is also a model output; nothing to prepare")
    mean, std = how.per_channel(channels)
    scale = (pixel_input.divisor / std).astype(np.float32)
    shift = ((pixel_input.offset - mean) / std).astype(np.float32)
    source = name
    nodes = []
    if dtype != np.float32:
        nodes.append(helper.make_node("Cast", [name], [f"{name}__float"], to=TensorProto.FLOAT))
        source = f"{name}__float"
    nodes += [
        helper.make_node("Mul", [source, f"{name}__scale"], [f"{name}__scaled"]),
        helper.make_node("Add", [f"{name}__scaled", f"{name}__shift"], [normalized]),
    ]
    graph.initializer.extend(
        [
            numpy_helper.from_array(scale, f"{name}__scale"),
            numpy_helper.from_array(shift, f"{name}__shift"),
        ]
    )
    for node in reversed(nodes):
        graph.node.insert(0, node)
    board_type = helper.np_dtype_to_tensor_dtype(dtype)
    for graph_input in graph.input:
        if graph_input.name == name:
            graph_input.type.tensor_type.elem_type = board_type


def _span(value: np.ndarray) -> str:
    if value.size == 0:
        return "none"
    return f"{value.min()}..{value.max()}"
