"""Layout requests every registered target must serve, as hypothesis strategies, and the helpers
the codec tests share (tensors to pack, what a round trip must give back).

The valid combinations are written down here from the specs (``spec/kl730-layouts.md``,
``spec/horizon-bpu-alignment.md``) and, for Rockchip, read from the seed tables in
``npu_hil.targets.rockchip`` (``input_rows``/``output_rows``), which ``test_rockchip_tables.py``
checks row by row against the seed. Nothing here asks the codec what is valid.

Shapes are small but deliberately awkward: widths that are not a multiple of any row alignment,
channel counts that are not a multiple of any group, H*W planes that are not a multiple of 4.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from npu_hil.harness.codec import BlockedLayout, get_layout
from npu_hil.targets import rockchip

# ------------------------------------------------------------------------------ KL730 (seed 000)

KL730_8BIT = (
    "4W4C8B",
    "1W16C8B_CH_COMPACT",
    "16W1C8B",
    "1W16C8B",
    "RAW_8B",
    "HW4C8B_KEEP_A",
    "HW4C8B_DROP_A",
    "HW1C8B",
)
KL730_16BIT = (
    "8W1C16B",
    "4W4C8BHL",
    "1W16C8BHL",
    "16W1C8BHL",
    "1W16C8BHL_CH_COMPACT",
    "RAW_16B",
    "HW1C16B_LE",
    "HW1C16B_BE",
)
KL730_FORMATS = KL730_8BIT + KL730_16BIT
#: Missing from the seed's "Output Data Layout" section.
KL730_INPUT_ONLY = frozenset(
    {"4W4C8B", "HW4C8B_KEEP_A", "HW4C8B_DROP_A", "HW1C8B", "HW1C16B_LE", "HW1C16B_BE"}
)
#: The formats the runtime reads with bit 0 dropped (spec note 3).
KL730_15BIT = frozenset(
    {"8W1C16B", "4W4C8BHL", "1W16C8BHL", "16W1C8BHL", "1W16C8BHL_CH_COMPACT", "RAW_16B"}
)
#: Formats whose channel count is fixed by the seed (spec note 5), or bounded by Kneron's reading
#: of stride_npu (4W4C8B/4W4C8BHL have no channel group term: at most 4 channels).
KL730_CHANNELS = {
    "HW4C8B_KEEP_A": (4,),
    "HW4C8B_DROP_A": (3, 4),
    "4W4C8B": (1, 2, 3, 4),
    "4W4C8BHL": (1, 2, 3, 4),
}
#: Kneron's outer channel group formats: stride_npu describes one group of 16 channels and the
#: group stride is derived from the other axes, so a rank-1 (C) tensor of C > 16 has none.
KL730_OUTER = frozenset({"1W16C8B", "1W16C8BHL"})
#: The channel a format never stores (it reads back as zero).
KL730_DROPPED_CHANNEL = {"HW4C8B_DROP_A": 3}

# ------------------------------------------------------------------------ Rockchip (seed 002)

ROCKCHIP_TARGETS = rockchip.TARGETS
#: Declared input types the input table files under "other types".
RKNN_OTHER_DTYPES = ("float32", "int16", "int32", "uint16", "uint32")
RKNN_INPUT_LAYOUTS_4D = ("NHWC", "NC1HWC2", "UNDEFINE")
#: dtypes by the output table's precision column.
RKNN_PRECISION_DTYPES = {"int8": ("int8", "uint8"), "float16": ("float16",)}

# ------------------------------------------------------------------------- Horizon (seed 003)

HORIZON_TARGETS = ("rdk-x3", "rdk-x5", "rdk-s100")
HORIZON_DTYPES = (
    "int8",
    "uint8",
    "int16",
    "uint16",
    "float16",
    "float32",
    "int32",
    "uint32",
    "int64",
    "float64",
)

ALL_TARGETS = ("kl730", *ROCKCHIP_TARGETS, *HORIZON_TARGETS)


@dataclass(frozen=True)
class Case:
    """One layout request: the arguments of :func:`npu_hil.harness.codec.get_layout`."""

    target: str
    layout: str
    role: str
    shape: tuple[int, ...]
    dtype: str
    params: dict[str, Any] = field(default_factory=dict)

    def build(self) -> BlockedLayout:
        return get_layout(
            self.target, self.layout, self.shape, self.dtype, role=self.role, **self.params
        )

    def __str__(self) -> str:
        params = "".join(f", {k}={v!r}" for k, v in sorted(self.params.items()))
        return (
            f"get_layout({self.target!r}, {self.layout!r}, {self.shape}, {self.dtype!r}, "
            f"role={self.role!r}{params})"
        )


# ------------------------------------------------------------------------------------ shapes

N_VALUES = (1, 1, 1, 2)


@dataclass(frozen=True)
class Limits:
    """Upper bounds of the drawn sizes; ``small`` keeps buffers to a few KiB."""

    c: int = 40
    h: int = 7
    w: int = 37


FULL = Limits()
SMALL = Limits(c=20, h=3, w=19)
#: Buffers of tens of KiB: big enough for the compiled strided-copy path of ``pack``/``unpack``.
LARGE = Limits(c=64, h=9, w=70)


def limits(small: bool | Limits) -> Limits:
    if isinstance(small, Limits):
        return small
    return SMALL if small else FULL


@st.composite
def nchw(draw: st.DrawFn, lim: Limits, channels: tuple[int, ...] | None = None) -> tuple[int, ...]:
    n = draw(st.sampled_from(N_VALUES))
    c = draw(st.sampled_from(channels)) if channels else draw(st.integers(1, lim.c))
    h = draw(st.integers(1, lim.h))
    w = draw(st.integers(1, lim.w))
    return (n, c, h, w)


@st.composite
def other_rank_shape(draw: st.DrawFn, lim: Limits) -> tuple[int, ...]:
    """A shape of rank 1, 2, 3 or 5 (the tables' "not 4-D" rows)."""
    rank = draw(st.sampled_from((1, 2, 3, 5)))
    bounds = {1: (lim.w,), 2: (lim.c, lim.w), 3: (lim.c, lim.h, lim.w)}.get(
        rank, (2, lim.c // 4, 3, lim.h, lim.w)
    )
    return tuple(draw(st.integers(1, b)) for b in bounds)


# ------------------------------------------------------------------------------------- KL730


@st.composite
def kl730_cases(draw: st.DrawFn, small: bool | Limits = False, fmt: str | None = None) -> Case:
    lim = limits(small)
    fmt = fmt or draw(st.sampled_from(KL730_FORMATS))
    role = "input" if fmt in KL730_INPUT_ONLY else draw(st.sampled_from(("input", "output")))
    dtype = draw(st.sampled_from(("int8", "uint8") if fmt in KL730_8BIT else ("int16", "uint16")))
    shape4 = draw(nchw(lim, KL730_CHANNELS.get(fmt)))
    # Rank 4 is (N, C, H, W); the codec also takes (C), (N, C) and (N, C, W).
    n, c, _, w = shape4
    ranks = (4, 4, 4, 3, 2) if fmt in KL730_OUTER and c > 16 else (4, 4, 4, 3, 2, 1)
    rank = draw(st.sampled_from(ranks))
    shape = {4: shape4, 3: (n, c, w), 2: (n, c), 1: (c,)}[rank]
    params: dict[str, Any] = {}
    if fmt in KL730_15BIT and draw(st.booleans()):
        params["value_bits"] = draw(st.sampled_from((15, 16)))
    if fmt == "HW1C16B_LE" and draw(st.booleans()):
        params["value_bits"] = 16
    return Case("kl730", fmt, role, shape, dtype, params)


# ---------------------------------------------------------------------------------- Rockchip


def _input_dtypes(row: rockchip.InputRow) -> tuple[str, ...]:
    declared = rockchip.INPUT_TYPES if row.input_types == "any" else row.input_types
    names: list[str] = []
    for t in rockchip.INPUT_TYPES:
        if t in declared:
            names += RKNN_OTHER_DTYPES if t == "other" else (t,)
    return tuple(names)


@st.composite
def rockchip_input_cases(
    draw: st.DrawFn, small: bool | Limits = False, target: str | None = None
) -> Case:
    lim = limits(small)
    target = target or draw(st.sampled_from(ROCKCHIP_TARGETS))
    row = draw(st.sampled_from(rockchip.input_rows(target)))
    first_layer = (
        row.first_layer if row.first_layer != "any" else draw(st.sampled_from(rockchip.PRECISIONS))
    )
    params: dict[str, Any] = {}
    if first_layer != rockchip.default_first_layer(target) or draw(st.booleans()):
        params["first_layer"] = first_layer
    if not row.rank4:
        dtype = draw(st.sampled_from(_input_dtypes(row)))
        return Case(target, "UNDEFINE", "input", draw(other_rank_shape(lim)), dtype, params)
    dtype = draw(st.sampled_from(_input_dtypes(row)))
    layouts: tuple[str, ...] = RKNN_INPUT_LAYOUTS_4D
    if dtype not in ("int8", "uint8", "float16"):
        # NC1HWC2's C2 comes from the output table's precision, which only int8/uint8/float16
        # have (see test_errors.py for what an "other" declared type gets).
        layouts = tuple(name for name in layouts if name != "NC1HWC2")
    layout = draw(st.sampled_from(layouts))
    shape = draw(nchw(lim))
    if layout == "NHWC" and draw(st.booleans()):
        params["w_stride"] = shape[3] + draw(st.integers(0, 20))
    if layout == "NC1HWC2":
        _draw_nc1hwc2_params(draw, shape, params, output=False)
    case = Case(target, layout, "input", shape, dtype, params)
    return _maybe_size(draw, case, "size_with_stride" if layout != "UNDEFINE" else None)


def _draw_nc1hwc2_params(
    draw: st.DrawFn, shape: tuple[int, ...], params: dict[str, Any], *, output: bool
) -> None:
    n, c, h, w = shape
    if draw(st.booleans()):
        params["c2"] = draw(st.sampled_from((1, 2, 4, 8, 16, 32)))
    if output and draw(st.booleans()):
        params["hw_align"] = draw(st.sampled_from((1, 2, 4, 8)))
    if draw(st.integers(0, 3)) == 0:
        c2 = draw(st.sampled_from((4, 8, 16)))
        c1 = -(-c // c2) + draw(st.integers(0, 1))
        params["native_dims"] = [
            n,
            c1,
            h + draw(st.integers(0, 2)),
            w + draw(st.integers(0, 3)),
            c2,
        ]


def _maybe_size(draw: st.DrawFn, case: Case, key: str | None) -> Case:
    """Sometimes add a device-reported buffer size larger than the prediction."""
    if key is None or draw(st.integers(0, 3)):
        return case
    nbytes = case.build().nbytes
    params = {**case.params, key: nbytes + draw(st.integers(0, 48))}
    return Case(case.target, case.layout, case.role, case.shape, case.dtype, params)


@st.composite
def rockchip_output_cases(
    draw: st.DrawFn, small: bool | Limits = False, target: str | None = None
) -> Case:
    lim = limits(small)
    target = target or draw(st.sampled_from(ROCKCHIP_TARGETS))
    row = draw(st.sampled_from(rockchip.output_rows(target)))
    layout = draw(st.sampled_from(sorted(row.layouts)))
    precisions = rockchip.PRECISIONS if row.precision == "any" else (row.precision,)
    dtype = draw(st.sampled_from([d for p in precisions for d in RKNN_PRECISION_DTYPES[p]]))
    params: dict[str, Any] = {}
    if not row.rank4:
        return _maybe_size(
            draw, Case(target, layout, "output", draw(other_rank_shape(lim)), dtype), "size"
        )
    shape = draw(nchw(lim))
    if layout in ("NHWC", "NC1HWC2") and draw(st.booleans()):
        params["last_op"] = draw(st.sampled_from(("conv", "other")))
    if layout == "NC1HWC2":
        _draw_nc1hwc2_params(draw, shape, params, output=True)
    return _maybe_size(draw, Case(target, layout, "output", shape, dtype, params), "size")


def rockchip_cases(small: bool | Limits = False) -> st.SearchStrategy[Case]:
    return st.one_of(rockchip_input_cases(small), rockchip_output_cases(small))


# ----------------------------------------------------------------------------------- Horizon


@st.composite
def horizon_strided_cases(
    draw: st.DrawFn, small: bool | Limits = False, target: str | None = None
) -> Case:
    lim = limits(small)
    target = target or draw(st.sampled_from(HORIZON_TARGETS))
    dtype = draw(st.sampled_from(HORIZON_DTYPES))
    role = draw(st.sampled_from(("input", "output")))
    rank = draw(st.integers(1, 5))
    bounds = {1: (lim.w,), 2: (lim.h, lim.w), 3: (lim.c, lim.h, lim.w)}.get(
        rank, (2, lim.c, lim.h, lim.w, 3)[:rank]
    )
    shape = tuple(draw(st.integers(1, b)) for b in bounds)
    params: dict[str, Any] = {}
    if draw(st.booleans()):
        params["tensor_layout"] = draw(st.sampled_from(("NCHW", "NHWC")))
    item = np.dtype(dtype).itemsize
    how = draw(st.sampled_from(("predicted", "predicted", "aligned_shape", "stride")))
    if how != "predicted":
        aligned = tuple(s + draw(st.integers(0, 3)) for s in shape)
        if how == "aligned_shape":
            params["aligned_shape"] = list(aligned)
        else:
            # Device-reported byte strides: contiguous over an aligned shape, with a gap of a few
            # elements between some rows.
            stride = [item] * rank
            for axis in range(rank - 2, -1, -1):
                gap = draw(st.integers(0, 2)) * item
                stride[axis] = stride[axis + 1] * aligned[axis + 1] + gap
            params["stride"] = stride
    case = Case(target, "strided", role, shape, dtype, params)
    if draw(st.integers(0, 3)) == 0:
        extra = draw(st.sampled_from((0, 1, 31, 64)))
        params = {**params, "aligned_byte_size": case.build().nbytes + extra}
        case = Case(target, "strided", role, shape, dtype, params)
    return case


@st.composite
def horizon_image_cases(
    draw: st.DrawFn, small: bool | Limits = False, target: str | None = None
) -> Case:
    lim = limits(small)
    target = target or draw(st.sampled_from(HORIZON_TARGETS))
    layout = draw(st.sampled_from(("NV12", "Y")))
    if layout == "NV12":
        h = 2 * draw(st.integers(1, (lim.h + 1) // 2))
        w = 2 * draw(st.integers(1, (lim.w + 1) // 2))
        rows = 3 * h // 2
    else:
        rows = draw(st.integers(1, lim.h))
        w = draw(st.integers(1, lim.w))
    shape = (draw(st.sampled_from(N_VALUES)), rows, w) if draw(st.booleans()) else (rows, w)
    params: dict[str, Any] = {}
    choice = draw(st.integers(0, 3))
    if choice == 1:
        params["stride"] = -1  # what RDK S100 reports for NV12/Y: dynamic
    elif choice == 2:
        params["stride"] = -(-w // 32) * 32 + 32 * draw(st.integers(0, 2))
    return Case(target, layout, "input", shape, "uint8", params)


def horizon_cases(small: bool | Limits = False) -> st.SearchStrategy[Case]:
    return st.one_of(horizon_strided_cases(small), horizon_image_cases(small))


def cases(small: bool | Limits = False) -> st.SearchStrategy[Case]:
    """Any valid request for any registered target."""
    return st.one_of(kl730_cases(small), rockchip_cases(small), horizon_cases(small))


#: Families of requests, one hypothesis run each, so that every format, platform and role gets
#: its share of examples: ``kl730:<format>``, ``<rockchip target>:<role>``,
#: ``<horizon target>:strided`` and ``<horizon target>:image``.
FAMILIES: tuple[str, ...] = (
    *(f"kl730:{fmt}" for fmt in KL730_FORMATS),
    *(f"{t}:{role}" for t in ROCKCHIP_TARGETS for role in ("input", "output")),
    *(f"{t}:{kind}" for t in HORIZON_TARGETS for kind in ("strided", "image")),
)


def family_cases(family: str, small: bool | Limits = False) -> st.SearchStrategy[Case]:
    """The requests of one family of :data:`FAMILIES`."""
    target, kind = family.split(":")
    if target == "kl730":
        return kl730_cases(small, fmt=kind)
    if target in ROCKCHIP_TARGETS:
        build = rockchip_input_cases if kind == "input" else rockchip_output_cases
        return build(small, target=target)
    if kind == "strided":
        return horizon_strided_cases(small, target=target)
    return horizon_image_cases(small, target=target)


# ------------------------------------------------------------------- one case per registry row


def representative_cases() -> list[Case]:
    """One awkward but valid request per (target, layout, role, table row), for coverage that does
    not depend on what hypothesis happens to draw."""
    out: list[Case] = []
    for fmt in KL730_FORMATS:
        dtype = "uint8" if fmt in KL730_8BIT else "int16"
        roles = ("input",) if fmt in KL730_INPUT_ONLY else ("input", "output")
        for role in roles:
            for c in KL730_CHANNELS.get(fmt, (19,)):
                out.append(Case("kl730", fmt, role, (2, c, 3, 13), dtype))
    for target in ROCKCHIP_TARGETS:
        for irow in rockchip.input_rows(target):
            first = irow.first_layer if irow.first_layer != "any" else "int8"
            if target == "rk2118":
                first = "float16"
            for dtype in _input_dtypes(irow)[:3]:
                params: dict[str, Any] = {"first_layer": first}
                if not irow.rank4:
                    out.append(Case(target, "UNDEFINE", "input", (3, 5, 7), dtype, params))
                    continue
                for layout in RKNN_INPUT_LAYOUTS_4D:
                    if layout == "NC1HWC2" and dtype not in ("int8", "uint8", "float16"):
                        continue
                    for c in (3, 5):
                        out.append(Case(target, layout, "input", (1, c, 3, 5), dtype, params))
        for orow in rockchip.output_rows(target):
            precision = "int8" if orow.precision == "any" else orow.precision
            dtype = RKNN_PRECISION_DTYPES[precision][0]
            for layout in sorted(orow.layouts):
                if not orow.rank4:
                    out.append(Case(target, layout, "output", (2, 7), dtype))
                    continue
                for last_op in ("conv", "other", "conv_sigmoid"):
                    params = {"last_op": last_op} if layout in ("NHWC", "NC1HWC2") else {}
                    out.append(Case(target, layout, "output", (2, 20, 3, 5), dtype, params))
        # Flat outputs of rank 2 and 3 on every platform (the compiler builds them also where
        # the seed lists no such row: deviation non4d-outputs), a Softmax's padded rows too.
        if all(row.rank4 for row in rockchip.output_rows(target)):
            dtype = RKNN_PRECISION_DTYPES["int8"][0]
            out.append(Case(target, "UNDEFINE", "output", (2, 7), dtype))
        out.append(
            Case(target, "UNDEFINE", "output", (1, 6, 21), "float16", {"last_axis_align": 4})
        )
        # The normal API's NCHW output, on every platform (also where the zero-copy table has
        # no NCHW row).
        precision = "float16" if target == "rk2118" else "int8"
        dtype = RKNN_PRECISION_DTYPES[precision][0]
        out.append(Case(target, "NCHW", "output", (1, 5, 3, 5), dtype))
    for target in HORIZON_TARGETS:
        for tensor_layout in ("NCHW", "NHWC"):
            out.append(
                Case(
                    target,
                    "strided",
                    "output",
                    (1, 3, 5, 7),
                    "uint16",
                    {"tensor_layout": tensor_layout},
                )
            )
        out.append(Case(target, "strided", "input", (2, 5, 7), "float32"))
        out.append(Case(target, "NV12", "input", (1, 6, 10), "uint8"))
        out.append(Case(target, "Y", "input", (5, 7), "uint8"))
    return out


# ----------------------------------------------------------------------------- tensor helpers


def value_bits(layout: BlockedLayout) -> int:
    """Significant bits a round trip keeps: 15 for the KL730 formats read with bit 0 dropped."""
    bits = layout.attributes.get("value_bits")
    return int(bits) if bits is not None else 8 * layout.dtype.itemsize


def unsigned(array: np.ndarray) -> np.ndarray:
    """The array's bits as unsigned integers of the same width (exact comparison, NaN-safe)."""
    return array.view(f"u{array.dtype.itemsize}")


def random_tensor(layout: BlockedLayout, seed: int, *, clear_bit0: bool = False) -> np.ndarray:
    """Random bits in the layout's logical shape and dtype (floats may be NaN: compare bits)."""
    rng = np.random.default_rng(seed)
    count = int(np.prod(layout.shape)) * layout.dtype.itemsize
    x = rng.integers(0, 256, size=count, dtype=np.uint8).view(layout.dtype).reshape(layout.shape)
    if clear_bit0:
        bits = unsigned(x)
        bits &= np.array((1 << (8 * layout.dtype.itemsize)) - 2, dtype=bits.dtype)
    return x


def roundtrip_value(layout: BlockedLayout, x: np.ndarray) -> np.ndarray:
    """What ``unpack(pack(x))`` must give: bit 0 cleared where the format carries 15 bits, the
    channel a format drops read back as zero."""
    out: np.ndarray = x.copy()
    if value_bits(layout) == 15:
        bits = unsigned(out)
        bits &= np.array(0xFFFE, dtype=bits.dtype)
    dropped = KL730_DROPPED_CHANNEL.get(layout.name) if layout.target == "kl730" else None
    if dropped is not None:
        canonical: np.ndarray = out.reshape(layout.canonical_shape)
        if canonical.shape[1] > dropped:
            canonical[:, dropped] = 0
    return out


def is_stored(layout: BlockedLayout, index: tuple[int, ...]) -> bool:
    """Whether the element at ``index`` has bytes in the buffer at all."""
    dropped = KL730_DROPPED_CHANNEL.get(layout.name) if layout.target == "kl730" else None
    if dropped is None:
        return True
    rank = len(layout.shape)
    channel_axis = 0 if rank == 1 else 1
    return index[channel_axis] != dropped


def flip_mask(layout: BlockedLayout) -> int:
    """XOR mask that changes every stored byte of an element (bit 0 is not stored in 15 bits)."""
    full = (1 << (8 * layout.dtype.itemsize)) - 1
    return full & ~1 if value_bits(layout) == 15 else full


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
