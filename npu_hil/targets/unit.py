"""What a vendor is to the harness: one :class:`Vendor` per vendor package in ``npu_hil/targets/``
(docs/design/index.md, "Adding a vendor"). Every field past the layouts is optional: the callers
say so when they need what a vendor lacks."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from typing_extensions import TypedDict

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.codec.registry import LayoutBuilder, ReportReader
from npu_hil.targets.compiler import ModelCompiler
from npu_hil.targets.quant import Quantizer

if TYPE_CHECKING:
    from npu_hil.targets.artifact import ArtifactInfo
    from npu_hil.targets.conv import ConvCheck, ConvSite

__all__ = [
    "ROW_ALIGNMENTS",
    "ApiPath",
    "Decoder",
    "FaultVariants",
    "PathAttributes",
    "PathTensor",
    "PixelInput",
    "PreflightContext",
    "PreflightFinding",
    "QuantModel",
    "SimOption",
    "VariantFinder",
    "Vendor",
]


class QuantModel(Protocol):
    """How a vendor's reported tensor values relate to floats (the oracle's half of a vendor).

    ``attributes`` is a tensor's record as its runtime reported it (the vendor's own fields,
    opaque to the harness): each vendor checks the fields it reads where the record enters."""

    def quantizer(self, attributes: Mapping[str, object]) -> Quantizer:
        """The quantization of an input the runtime reported with ``attributes``."""

    def model_input(self, attributes: Mapping[str, object], held: np.ndarray) -> np.ndarray:
        """The float tensor the model computes on for an input holding ``held``."""

    def output_quantizer(self, attributes: Mapping[str, object]) -> Quantizer:
        """The quantization of an output the runtime reported with ``attributes``."""

    def numerics(self, inputs: Sequence[Mapping[str, object]]) -> str:
        """How the NPU computes a model whose inputs were reported with ``inputs``:
        ``float``, ``int8`` or ``float16`` through the graph
        (``npu_hil.harness.models.numerics``)."""


ROW_ALIGNMENTS = (1, 4, 8, 16, 32)
"""The row alignments devices get wrong, which forensics tries for every vendor."""

VariantFinder = Callable[
    [str, str, tuple[int, ...], np.dtype], Iterator[tuple[Mapping[str, object], str]]
]
"""``(layout, role, shape, dtype)`` → the parameter variants a forensic search tries (each with
a note saying what it assumes), beyond the layout's own prediction: each vendor's layout
parameters, which its layout builder checks."""
FaultVariants = Callable[[BlockedLayout], Iterator[Mapping[str, object]]]
"""A layout → the parameters a misbehaving runtime might lay it out with instead (the
simulator's ``wrong-alignment`` fault tries them in order)."""


class Decoder(Protocol):
    """Turns a tensor's stored values into floats by the quantization its runtime reported."""

    keys: str
    """The report fields it reads, for an error message (``qnt_type``)."""

    def claims(self, reported: Mapping[str, Any]) -> bool:
        """Whether ``reported`` carries this vendor's quantization fields."""

    def dequantize(self, q: np.ndarray, reported: Mapping[str, Any], what: str) -> np.ndarray:
        """``q`` (float64 of the stored values) in float; a bad report is a DeviceError."""


@dataclass(frozen=True)
class PreflightFinding:
    """One preflight check: ``ok`` False is a violation of ``rule``."""

    node: str
    rule: str
    ok: bool
    message: str


@dataclass
class PreflightContext:
    """What a vendor's preflight check reads (the shape-inferred ONNX graph and the options the
    user gave) and where it puts what it finds."""

    target: str
    graph: Any
    shapes: dict[str, Any]
    inputs: list[Any]
    first_layer: str | None
    output_precision: str
    rule: str | None
    input_type: str | None
    findings: list[PreflightFinding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SimOption:
    """One option the vendor's simulated runtime takes (beside the common ones)."""

    help: str
    choices: tuple[str, ...]


@dataclass(frozen=True)
class NpuThroughput:
    """A target's NPU as its vendor rates it, for the simulated board's modeled time
    (``npu_hil.harness.sim.timing``): the published int8 peak in TOPS, the NPU cores it is spread
    over (a model runs on one unless told otherwise), and where the figure comes from."""

    tops: float
    cores: int = 1
    source: str = ""

    @property
    def per_model_tops(self) -> float:
        return self.tops / self.cores


class PathAttributes(TypedDict, total=False):
    """A tensor's attributes under the names every API path shares (:class:`PathTensor`): what
    the cross-API check compares between two paths."""

    shape: list[int]
    dtype: str
    layout: str
    valid_shape: list[int]
    aligned_shape: list[int]
    scale: float | list[float]
    zero_point: int
    stride: list[int]
    size: int


@dataclass(frozen=True)
class PathTensor:
    """An output as one API path handed it back, read as the model's tensor: ``values`` in the
    model's logical shape (None when the path's buffer is not the tensor: ``note`` says why),
    and ``attributes`` under the names every path shares (:class:`PathAttributes`): only those
    that describe the model's tensor, not a conversion the path documents making."""

    values: np.ndarray | None
    attributes: Mapping[str, Any]
    note: str = ""


@dataclass(frozen=True)
class ApiPath:
    """One of a vendor's ways to run a model on its boards (``Vendor.api_paths``).

    ``adapter`` is the board adapter that takes it; ``api`` what the vendor calls it;
    ``native`` whether it hands back the device's native buffers (checked byte for byte, and
    read with the reported layout) or tensors its runtime converted, which ``read`` turns into
    the model's tensor. ``attributes`` maps a native path's report to the shared names."""

    adapter: str
    api: str
    native: bool
    read: Callable[[str, np.ndarray, Mapping[str, Any], tuple[int, ...]], PathTensor] | None = None
    """Called with the output's name, data, reported attributes and logical shape."""
    attributes: Callable[[Mapping[str, Any]], PathAttributes] | None = None


@dataclass(frozen=True)
class PixelInput:
    """How a vendor's boards take uint8 pixels for a model whose normalization is declared
    (``npu_hil.harness.models.preprocessing``): the board's input holds
    ``(pixel - offset) / divisor`` as ``dtype``, and the rest of the declared mean/std is compiled
    into the model, as the vendor's toolchain does it (``how`` says which way)."""

    dtype: str
    offset: float = 0.0
    divisor: float = 1.0
    how: str = ""
    dtypes: Mapping[str, str] = field(default_factory=dict)
    """Per target, where its boards take the pixels in another dtype than ``dtype``."""

    def dtype_for(self, target: str) -> str:
        return self.dtypes.get(target, self.dtype)


@dataclass(frozen=True)
class Vendor:
    """One vendor: its targets, its layouts and everything the harness stages ask of it."""

    name: str
    targets: tuple[str, ...]
    build_layout: LayoutBuilder
    layout_names: Callable[[], tuple[str, ...]]
    tables_text: Callable[[str], str]
    report: ReportReader | None = None
    """Reads the runtime's tensor report into a codec layout (``codec.reported``)."""
    quant: QuantModel | None = None
    decode: Decoder | None = None
    """Turns a real board's fetched values into floats (``npu_hil.harness.farm.decode``)."""
    simulator: str | Callable[..., Any] | None = None
    """The simulated runtime: a factory taking the sim options, or its ``module:attribute``
    (imported when a board of this vendor is first simulated)."""
    sim_options: Mapping[str, SimOption] = field(default_factory=dict)
    npu_throughput: Mapping[str, NpuThroughput] = field(default_factory=dict)
    """Per target: the NPU's published throughput (the simulated board's modeled time)."""
    default_input_layout: Callable[[tuple[int, ...]], str] | None = None
    """The native input layout the host packs for a pass-through runtime when the caller names
    none, for an input of that shape."""
    pass_through_adapters: tuple[str, ...] = ()
    """The board adapters that hand pre-laid-out input bytes to the NPU unconverted."""
    hardware_adapter: str | None = None
    """The board adapter a real board of this vendor runs by default."""
    api_paths: tuple[ApiPath, ...] = ()
    """The vendor's ways to run one model (the cross-API check runs a job through the board's
    and another, and diffs them); the first is the native (zero-copy) path the simulated
    runtime is. One path, or none: the check is not applicable."""
    compiler: ModelCompiler | None = None
    """Compiles the reference models for a real board (``npu-hil models build``)."""
    artifact_suffixes: tuple[str, ...] = ()
    """The compiled-model file suffixes of this vendor's toolchain."""
    read_artifact: Callable[[Path], ArtifactInfo] | None = None
    """Reads a compiled model's own version and target fields, bounded; a file that is not one is
    an ArtifactError."""
    compatibility: Path | None = None
    """The vendor's compatibility table (:mod:`npu_hil.targets.compatibility`)."""
    identity: Path | None = None
    """The SoC identity table: which device-tree compatible strings a board of each target
    reports (:mod:`npu_hil.targets.identity`)."""
    forensic_variants: VariantFinder | None = None
    fault_variants: FaultVariants | None = None
    enum_prefixes: tuple[str, ...] = ()
    """Prefixes the runtime puts on enum names in its reports, dropped before comparing."""
    address_rule: str | None = None
    """Where the vendor documents a buffer-address alignment (the attribute diff names it)."""
    last_op_kind: Callable[[str, str, tuple[str, ...]], str] | None = None
    """What the compiler makes of the op that produces an output, where a layout depends on it."""
    pixel_input: PixelInput | None = None
    """How the boards take uint8 pixels with the normalization compiled in (None: the vendor
    has no such path, and pixels are refused)."""
    preflight: Callable[[PreflightContext], None] | None = None
    """Checks a model against the vendor's tables before it is compiled (``npu-hil preflight``)."""
    # The convolution width rule (target, width, kernel, dilation, kind, rule, first layer,
    # site), for a vendor whose documents state one or whose compiler was measured
    # (npu_hil.targets.conv checks the arguments first).
    check_conv: (
        Callable[
            [str, int, tuple[int, int], tuple[int, int], str, str | None, str, ConvSite],
            ConvCheck,
        ]
        | None
    ) = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    """Vendor-specific hooks for one caller (preflight, cli), named by that caller."""
