"""The shared codec test kit, run over every layout in the registry.

For any valid request (``strategies.cases``): ``unpack(pack(x))`` gives ``x`` back (up to what the
format cannot hold: bit 0 of the KL730 15-bit formats, the dropped alpha channel); the buffer is
32-byte aligned, ``nbytes`` long and zero wherever ``padding_mask`` says; ``locate`` and
``offset_of`` agree with the bytes ``pack`` writes; every byte is padding or exactly one element
slot; the layout's config and the attributes it predicts rebuild the same layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import (
    ALL_TARGETS,
    FAMILIES,
    KL730_8BIT,
    KL730_15BIT,
    KL730_CHANNELS,
    KL730_FORMATS,
    LARGE,
    Case,
    family_cases,
    flip_mask,
    is_stored,
    kl730_cases,
    representative_cases,
    roundtrip_value,
    same_bits,
    unsigned,
    value_bits,
)
from strategies import random_tensor as make_tensor

from npu_hil.harness.codec import BlockedLayout, Dim, get_layout, known_targets, layout_names
from npu_hil.harness.errors import LayoutError

SEEDS = st.integers(0, 2**32 - 1)
EXHAUSTIVE_MAX_BYTES = 6144


# ------------------------------------------------------------------------------------ checks


def check_buffer(layout: BlockedLayout, buf: np.ndarray) -> None:
    __tracebackhide__ = True
    assert isinstance(buf, np.ndarray)
    assert buf.dtype == np.uint8 and buf.ndim == 1
    assert buf.size == layout.nbytes
    assert buf.ctypes.data % 32 == 0, f"buffer at {buf.ctypes.data:#x} is not 32-byte aligned"
    mask = layout.padding_mask()
    assert mask.dtype == bool and mask.shape == (layout.nbytes,)
    assert int(mask.sum()) == layout.padding_bytes
    nonzero = np.flatnonzero(buf[mask])
    assert nonzero.size == 0, (
        f"padding bytes not zero at offsets {np.flatnonzero(mask)[nonzero][:10].tolist()}"
    )


def check_roundtrip(case: Case, seed: int) -> None:
    __tracebackhide__ = True
    layout = case.build()
    x = make_tensor(layout, seed, clear_bit0=value_bits(layout) == 15)
    buf = layout.pack(x)
    check_buffer(layout, buf)
    packed = buf.copy()
    back = layout.unpack(buf)
    want = roundtrip_value(layout, x)
    assert same_bits(back, want), f"{case}: unpack(pack(x)) != x"
    assert np.array_equal(buf, packed), f"{case}: unpack wrote into its input"
    back[...] = 0
    assert np.array_equal(buf, packed), f"{case}: unpack's result shares the buffer's memory"
    # Bytes-like and misaligned buffers unpack the same.
    assert same_bits(layout.unpack(bytes(buf)), want)
    shifted = np.zeros(layout.nbytes + 3, np.uint8)[3:]
    shifted[...] = buf
    assert same_bits(layout.unpack(shifted), want), f"{case}: unpack of a misaligned buffer"
    # A non-contiguous view of the same tensor packs the same.
    strided = np.zeros((*x.shape, 2), x.dtype)[..., 1]
    strided[...] = x
    assert np.array_equal(layout.pack(strided), buf), f"{case}: pack of a strided view"
    # Padding is zero even when every input byte is 0xFF.
    ones = np.full(x.nbytes, 0xFF, np.uint8).view(layout.dtype).reshape(layout.shape)
    check_buffer(layout, layout.pack(ones))
    assert np.array_equal(buf, packed), f"{case}: a second pack changed the first buffer"
    # What sits in padding does not matter to unpack.
    mask = layout.padding_mask()
    if mask.any():
        dirty = buf.copy()
        dirty[mask] = 0xA5
        assert same_bits(layout.unpack(dirty), want), f"{case}: padding bytes leaked into unpack"


def check_locate(case: Case, seed: int, offsets: list[int]) -> None:
    """``locate`` at a few offsets agrees with ``pack``, ``offset_of`` and ``padding_mask``."""
    __tracebackhide__ = True
    layout = case.build()
    x = make_tensor(layout, seed, clear_bit0=value_bits(layout) == 15)
    buf = layout.pack(x)
    mask = layout.padding_mask()
    itemsize = layout.dtype.itemsize
    for raw in offsets:
        offset = raw % layout.nbytes
        loc = layout.locate(offset)
        assert loc.offset == offset
        if layout.entry_bytes:
            assert loc.entry == offset // 16
            byte = offset % 16
            assert loc.bits == f"[{8 * byte + 7}:{8 * byte}]"
        if loc.padding:
            assert loc.index is None and loc.part is None
            assert mask[offset], f"{case}: locate({offset}) says padding, padding_mask does not"
            assert buf[offset] == 0
            continue
        assert not mask[offset], f"{case}: locate({offset}) = {loc.index}, mask says padding"
        assert loc.index is not None and len(loc.index) == len(layout.shape)
        assert all(0 <= i < s for i, s in zip(loc.index, layout.shape, strict=True))
        assert is_stored(layout, loc.index)
        slot = loc.byte_in_element
        assert slot is not None and 0 <= slot < itemsize
        assert layout.offset_of(loc.index, slot) == offset
        if itemsize == 1:
            assert loc.part is None
        elif itemsize == 2:
            assert loc.part in ("L", "H")
        # Changing that element (every stored bit of it) changes that byte.
        y = x.copy()
        unsigned(y)[loc.index] ^= flip_mask(layout)
        changed = np.flatnonzero(layout.pack(y) != buf)
        assert offset in changed, f"{case}: changing x{loc.index} left byte {offset} as it was"
        owners = {layout.locate(int(o)).index for o in changed}
        assert owners == {loc.index}, f"{case}: changing x{loc.index} touched bytes of {owners}"


def check_every_byte(case: Case) -> None:
    """Every byte of the buffer is padding or exactly one (element, slot), both ways round."""
    __tracebackhide__ = True
    layout = case.build()
    mask = layout.padding_mask()
    owner: dict[int, tuple[tuple[int, ...], int]] = {}
    for index in np.ndindex(*layout.shape):
        if not is_stored(layout, index):
            continue
        for slot in range(layout.dtype.itemsize):
            offset = layout.offset_of(index, slot)
            assert 0 <= offset < layout.nbytes, f"{case}: x{index} slot {slot} at {offset}"
            assert offset not in owner, (
                f"{case}: byte {offset} holds both x{owner[offset]} and x{(index, slot)}"
            )
            owner[offset] = (index, slot)
    assert sorted(owner) == np.flatnonzero(~mask).tolist()
    for offset in range(layout.nbytes):
        loc = layout.locate(offset)
        if offset in owner:
            assert (loc.index, loc.byte_in_element) == owner[offset], f"{case}: locate({offset})"
            assert not loc.padding
        else:
            assert loc.padding and loc.index is None, f"{case}: locate({offset}) = {loc}"


def check_pack_matches_offset_of(case: Case, seed: int) -> None:
    """``pack`` writes, and ``unpack`` reads, every element slot where the closed-form offset
    (``offset_of``) says and nothing else: the oracle for the strided copies, whichever path
    (numpy or the compiled kernel) they take."""
    __tracebackhide__ = True
    layout = case.build()
    x = make_tensor(layout, seed, clear_bit0=value_bits(layout) == 15)
    offsets = slot_offsets(layout)
    rng = np.random.default_rng(seed)
    for _ in range(24):  # the table is the closed form: spot-check it against offset_of
        index = tuple(int(rng.integers(0, s)) for s in layout.shape)
        slot = int(rng.integers(0, layout.dtype.itemsize))
        canonical = np.unravel_index(
            np.ravel_multi_index(index, layout.shape), layout.canonical_shape
        )
        where = (*(int(i) for i in canonical), slot)
        assert offsets[where] == layout.offset_of(index, slot), (case, index, slot)
    stored = np.ones(layout.canonical_shape, bool)  # False: the dropped KL730 alpha channel
    for axis, size in enumerate(layout.stored):
        cut = [slice(None)] * len(layout.stored)
        cut[axis] = slice(size, None)
        stored[tuple(cut)] = False
    slots = encode_slots(layout, x.reshape(layout.canonical_shape))
    reference = np.zeros(layout.nbytes, np.uint8)
    reference[offsets[stored]] = slots[stored]
    buf = layout.pack(x)
    diff = np.flatnonzero(buf != reference)
    assert diff.size == 0, (
        f"{case}: pack differs from the closed form at {diff.size} bytes, first at offset "
        f"{diff[0]} ({layout.locate(int(diff[0])).describe()})"
    )
    assert same_bits(layout.unpack(reference), roundtrip_value(layout, x))


def slot_offsets(layout: BlockedLayout) -> np.ndarray:
    """Byte offset of every slot of every element over the canonical shape (last axis: slot),
    by the engine's documented mixed-radix sum over its dims."""
    grids = np.indices(layout.canonical_shape, sparse=True)
    base = np.zeros(layout.canonical_shape, np.int64)
    for dim in layout.dims:
        base = base + ((grids[dim.axis] // dim.block) % dim.size) * dim.stride
    slots = np.arange(layout.dtype.itemsize) * layout.part_stride
    return base[..., None] + slots


def encode_slots(layout: BlockedLayout, x: np.ndarray) -> np.ndarray:
    """The bytes of each element in slot order, per the element encodings of the specs: KL730 HL
    planes carry bits [7:1] in L and [15:8] in H (spec note 3), HW1C16B_BE is big-endian,
    everything else little-endian (bit 0 is already clear where a format drops it)."""
    if layout.dtype.itemsize == 1:
        return unsigned(x)[..., None].astype(np.uint8)
    if layout.target == "kl730" and "8BHL" in layout.name and value_bits(layout) == 15:
        v = unsigned(x)
        return np.stack([(v >> 1) & 0x7F, v >> 8], axis=-1).astype(np.uint8)
    if layout.target == "kl730" and layout.name == "HW1C16B_BE":
        return x.astype(x.dtype.newbyteorder(">")).view(np.uint8).reshape((*x.shape, 2))
    little = x.astype(x.dtype.newbyteorder("<"))
    return little.view(np.uint8).reshape((*x.shape, x.dtype.itemsize))


def layout_config(layout: BlockedLayout) -> dict[str, Any]:
    """Everything :func:`npu_hil.harness.codec.get_layout` needs to build ``layout`` again."""
    return {
        "target": layout.target,
        "layout": layout.name,
        "shape": list(layout.shape),
        "dtype": layout.dtype.name,
        "role": layout.role,
        "params": dict(layout.params),
    }


def check_config(case: Case) -> None:
    __tracebackhide__ = True
    layout = case.build()
    config = layout_config(layout)
    params: dict[str, Any] = dict(config.pop("params"))
    assert set(config) == {"target", "layout", "shape", "dtype", "role"}
    again = get_layout(
        config["target"],
        config["layout"],
        config["shape"],
        config["dtype"],
        role=config["role"],
        **params,
    )
    assert again.nbytes == layout.nbytes
    assert again.dims == layout.dims
    assert again.strides == layout.strides
    assert again.shape == layout.shape and again.dtype == layout.dtype
    assert layout_config(again) == layout_config(layout)


# ----------------------------------------------------------------------------- the registry


def test_registry_knows_every_target() -> None:
    assert set(known_targets()) == set(ALL_TARGETS)
    assert set(layout_names("kl730")) == set(KL730_FORMATS)
    for target in ALL_TARGETS[1:12]:
        assert set(layout_names(target)) == {"NCHW", "NHWC", "NC1HWC2", "UNDEFINE"}
    for target in ALL_TARGETS[12:]:
        assert set(layout_names(target)) == {"strided", "NV12", "Y"}


REPRESENTATIVE = representative_cases()


@pytest.mark.parametrize("case", REPRESENTATIVE, ids=str)
def test_every_registered_layout(case: Case) -> None:
    check_roundtrip(case, seed=1)
    check_config(case)
    check_locate(case, seed=2, offsets=[0, 1, 7, 16, 33, 101, -1, -17])
    if case.build().nbytes <= EXHAUSTIVE_MAX_BYTES:
        check_every_byte(case)
    check_pack_matches_offset_of(case, seed=3)


def test_representative_cases_cover_the_registry() -> None:
    """Every (target, layout, role) the registry serves has a representative case."""
    covered = {(c.target, c.layout, c.role) for c in REPRESENTATIVE}
    served = set()
    for target in known_targets():
        for name in layout_names(target):
            for role in ("input", "output"):
                for shape in ((1, 4, 2, 6), (6, 8)):
                    for dtype in ("uint8", "int16", "float16"):
                        try:
                            get_layout(target, name, shape, dtype, role=role)
                        except LayoutError:
                            continue
                        served.add((target, name, role))
    assert ("rdk-x3", "NV12", "input") in served
    assert served <= covered, sorted(served - covered)


# --------------------------------------------------------------------------------- properties
# One hypothesis run per family (a KL730 format, a Rockchip platform and role, a Horizon target
# and kind), so that every one gets its share of examples. Budget: about 1,000 examples a test.

family = pytest.mark.parametrize("family", FAMILIES)


@pytest.mark.slow
@family
@settings(max_examples=30, deadline=None)
@given(data=st.data(), seed=SEEDS)
def test_roundtrip(family: str, data: st.DataObject, seed: int) -> None:
    case = data.draw(family_cases(family), label="case")
    check_roundtrip(case, seed)
    check_pack_matches_offset_of(case, seed)


@family
@settings(max_examples=15, deadline=None)
@given(data=st.data(), seed=SEEDS, offsets=st.lists(st.integers(0, 2**20), min_size=1, max_size=6))
def test_locate_agrees_with_pack(
    family: str, data: st.DataObject, seed: int, offsets: list[int]
) -> None:
    check_locate(data.draw(family_cases(family), label="case"), seed, offsets)


@family
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_every_byte_is_padding_or_located_once(family: str, data: st.DataObject) -> None:
    case = data.draw(family_cases(family, small=True), label="case")
    assume(case.build().nbytes <= EXHAUSTIVE_MAX_BYTES)
    check_every_byte(case)


@family
@settings(max_examples=4, deadline=None)
@given(data=st.data(), seed=SEEDS)
def test_large_buffers_roundtrip_and_match_offset_of(
    family: str, data: st.DataObject, seed: int
) -> None:
    """Buffers of tens of KiB, where pack/unpack take the compiled strided-copy path."""
    case = data.draw(family_cases(family, LARGE), label="case")
    check_roundtrip(case, seed)
    check_pack_matches_offset_of(case, seed)


@family
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_config_round_trip(family: str, data: st.DataObject) -> None:
    check_config(data.draw(family_cases(family), label="case"))


def _kernel_sized_cases() -> list[Case]:
    """Deterministic buffers of 4 KiB and more (the compiled copy's threshold) in the shapes its
    planner treats differently: interleaving a few channels, deinterleaving, 16x16 transposes of
    1- and 2-byte units, partial channel blocks, row padding."""
    out = [
        Case("rk3588", "NHWC", "input", (1, c, 32, 67), dtype)
        for dtype in ("uint8", "float16", "float32")
        for c in (1, 2, 3, 4, 5, 8, 16, 17)
    ]
    out += [
        Case("rk3588", layout, "output", (2, c, 17, 33), dtype, {"last_op": op})
        for layout in ("NHWC", "NC1HWC2")
        for dtype in ("int8", "float16")
        for c in (3, 20, 40)
        for op in ("conv", "other")
    ]
    out += [
        Case("kl730", fmt, "input", (2, c, 17, 45), "uint8" if fmt in KL730_8BIT else "int16")
        for fmt in KL730_FORMATS
        for c in KL730_CHANNELS.get(fmt, (5, 33))
    ]
    out += [
        Case("rdk-s100", "strided", "input", (1, 3, 67, 67), "float32"),
        Case("rdk-x3", "strided", "input", (1, 67, 67, 3), "uint8", {"tensor_layout": "NHWC"}),
        Case("rdk-x5", "strided", "output", (2, 17, 33, 5), "int64"),
        Case("rdk-s100", "NV12", "input", (1, 96, 130), "uint8"),
        Case("rdk-x3", "Y", "input", (2, 67, 67), "uint8"),
    ]
    return out


@pytest.mark.parametrize("case", _kernel_sized_cases(), ids=str)
def test_kernel_sized_layouts(case: Case) -> None:
    check_roundtrip(case, seed=11)
    check_pack_matches_offset_of(case, seed=12)


# ---------------------------------------------------------------------- KL730 element quirks


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(case=kl730_cases(), seed=SEEDS)
def test_kl730_bit0_is_dropped_exactly_where_value_bits_is_15(case: Case, seed: int) -> None:
    layout = case.build()
    expected_bits = (
        15 if case.layout in KL730_15BIT and case.params.get("value_bits", 15) == 15 else None
    )
    if layout.dtype.itemsize == 2:
        assert value_bits(layout) == (expected_bits or 16)
    x = make_tensor(layout, seed)
    bits = unsigned(x)
    bits |= np.array(1, dtype=bits.dtype)  # every value odd
    back = unsigned(layout.unpack(layout.pack(x)))
    if value_bits(layout) == 15:
        assert np.array_equal(back, bits & np.array(0xFFFE, dtype=bits.dtype))
    else:
        want = roundtrip_value(layout, x)
        assert same_bits(layout.unpack(layout.pack(x)), want)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("shape", [(1, 4, 3, 5), (2, 4, 1, 7), (4,), (2, 4), (1, 4, 9)])
def test_kl730_drop_a_reads_channel_3_as_zero(shape: tuple[int, ...], dtype: str) -> None:
    layout = get_layout("kl730", "HW4C8B_DROP_A", shape, dtype, role="input")
    x = np.full(shape, 0x7F, dtype=dtype)
    back = layout.unpack(layout.pack(x))
    channels = back.reshape(layout.canonical_shape)
    assert (channels[:, :3] == 0x7F).all()
    assert (channels[:, 3] == 0).all()
    # One zero byte a pixel: a quarter of the pixel bytes is padding.
    pixels = int(np.prod(shape)) // 4
    assert layout.padding_bytes >= pixels


# ----------------------------------------------------- reported attributes rebuild the layout


def _reported(layout: BlockedLayout) -> dict[str, Any] | None:
    """The attributes a device reports, as ``get_layout`` params, taken from the prediction."""
    a = layout.attributes
    if layout.target == "kl730":
        return {"stride_npu": a["stride_npu"]}
    if layout.name == "strided":
        return {"stride": a["stride"], "aligned_byte_size": a["alignedByteSize"]}
    if layout.name in ("NV12", "Y"):
        return {"stride": a["row_stride"], "aligned_byte_size": a["alignedByteSize"]}
    if layout.name == "NC1HWC2":
        key = "size_with_stride" if layout.role == "input" else "size"
        return {"native_dims": a["native_dims"], key: a[key]}
    if layout.name == "NHWC" and layout.role == "input":
        return {"w_stride": a["w_stride"], "size_with_stride": a["size_with_stride"]}
    return None


@family
@settings(max_examples=10, deadline=None)
@given(data=st.data(), seed=SEEDS)
def test_reported_attributes_rebuild_the_predicted_layout(
    family: str, data: st.DataObject, seed: int
) -> None:
    case = data.draw(family_cases(family), label="case")
    predicted = case.build()
    reported = _reported(predicted)
    if reported is None:  # flat layouts: the device reports nothing beyond the size
        return
    keep = {
        k: v
        for k, v in case.params.items()
        if k not in reported and k not in ("aligned_shape", "c2", "size", "size_with_stride")
    }
    device = Case(
        case.target, case.layout, case.role, case.shape, case.dtype, {**keep, **reported}
    ).build()
    assert device.nbytes == predicted.nbytes
    assert device.strides == predicted.strides
    x = make_tensor(predicted, seed, clear_bit0=value_bits(predicted) == 15)
    assert np.array_equal(device.pack(x), predicted.pack(x))


@pytest.mark.parametrize(
    ("fmt", "shape", "dtype"),
    [
        ("4W4C8B", (1, 3, 1), "uint8"),
        ("4W4C8BHL", (1, 4, 3), "int16"),
        ("1W16C8B", (1, 17), "int8"),
        ("1W16C8B", (16,), "int8"),
        ("1W16C8BHL", (2, 20, 3), "int16"),
        ("1W16C8B", (1, 17, 1, 1), "int8"),  # rank 4: the control
    ],
)
def test_kl730_stride_npu_as_reported_rebuilds_the_layout(
    fmt: str, shape: tuple[int, ...], dtype: str
) -> None:
    """A device that reports exactly the predicted ``stride_npu`` (one stride per axis of the
    tensor's own rank) must get the predicted layout back, whatever the rank."""
    role = "input"
    predicted = get_layout("kl730", fmt, shape, dtype, role=role)
    reported = predicted.attributes["stride_npu"]
    assert len(reported) == len(shape)
    device = get_layout("kl730", fmt, shape, dtype, role=role, stride_npu=reported)
    assert device.nbytes == predicted.nbytes

    def placed(layout: BlockedLayout) -> list[Dim]:
        return [d for d in layout.dims if d.size > 1]  # a size-1 dim's stride places nothing

    assert placed(device) == placed(predicted)
