"""A convolution against its target's width limits, whichever vendor serves the target: only the
RKNN2 seed states such limits (rules A and B, :mod:`npu_hil.targets.rockchip`); a vendor whose
unit has no ``check_conv`` hook has none, and the answer says so."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from npu_hil.harness.errors import LayoutError
from npu_hil.targets.registry import all_targets, unit_for

__all__ = [
    "CONV_KINDS",
    "PRECISIONS",
    "ConvCheck",
    "ConvCondition",
    "ConvSite",
    "check_conv",
    "dilated_kernel",
]

#: The convolution kinds a width rule distinguishes.
CONV_KINDS: tuple[str, ...] = ("conv", "depthwise", "deconv")
#: The first layer's precision, which picks the rule where a table lists two.
PRECISIONS: tuple[str, ...] = ("int8", "float16")


@dataclass(frozen=True)
class ConvSite:
    """Where a convolution sits, beyond its width: its input's height and channels, and whether
    it takes a graph input (the first layer, which a compiler feeds the image in its own mode).
    A measured limit applies only to the sites it was measured at."""

    height: int | None = None
    in_channels: int | None = None
    takes_input: bool = False


@dataclass(frozen=True)
class ConvCondition:
    """One condition of a width rule, evaluated, with the numbers in ``text``."""

    name: Literal["(1)", "(2)", "N", "measured"]
    ok: bool
    text: str


@dataclass(frozen=True)
class ConvCheck:
    """The outcome of :func:`check_conv`.

    ``failed`` names the conditions that do not hold, in the order of ``conditions``. When N < 1
    the convolution is unsupported outright and condition (1), which needs a valid N, is not
    evaluated (it is left out of ``conditions``).
    """

    ok: bool
    n: int | None
    rule: str | None
    kind: str
    width: int
    dilated_kernel_hw: tuple[int, int]
    conditions: tuple[ConvCondition, ...]
    failed: tuple[str, ...]
    message: str
    seed: ConvCheck | None = None
    """The seed's own verdict, kept beside it where a measured limit decided this one."""


def _positive_pair(name: str, value: object) -> tuple[int, int]:
    if (
        isinstance(value, tuple | list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        return int(value[0]), int(value[1])
    raise LayoutError(f"{name}: expected two positive integers (h, w), got {value!r}")


def dilated_kernel(k: int, dilation: int) -> int:
    """The extent of a kernel of ``k`` taps at ``dilation`` (the RKNN2 seed's special notes:
    ``kernel * dilation - dilation + 1``)."""
    return k + (k - 1) * (dilation - 1)


def check_conv(
    target: str,
    width: int,
    kernel_hw: tuple[int, int],
    dilation_hw: tuple[int, int] = (1, 1),
    kind: str = "conv",
    rule: str | None = None,
    first_layer: str = "int8",
    site: ConvSite | None = None,
) -> ConvCheck:
    """Check a convolution's input width and kernel against ``target``'s width-limit rule (the
    unit's ``check_conv``; see :func:`npu_hil.targets.rockchip.measuredwidths.check_conv`).

    ``kind`` is "conv", "depthwise" or "deconv"; ``rule`` and ``first_layer`` pick the rule where
    the target has several. ``site`` says where the convolution sits, for the limits measured
    on the vendor's compiler (:class:`ConvSite`). A target whose vendor states no limits passes
    with a message saying so.
    """
    known = all_targets()
    if not isinstance(target, str) or target not in known:
        raise LayoutError(f"unknown target {target!r}: expected one of {', '.join(known)}")
    unit = unit_for(target)
    if isinstance(width, bool) or not isinstance(width, int) or width <= 0:
        raise LayoutError(f"width: expected a positive integer, got {width!r}")
    kh, kw = _positive_pair("kernel_hw", kernel_hw)
    dh, dw = _positive_pair("dilation_hw", dilation_hw)
    choices = (("convolution kind", kind, CONV_KINDS), ("first_layer", first_layer, PRECISIONS))
    for what, value, allowed in choices:
        if value not in allowed:
            raise LayoutError(f"{what}: expected one of {', '.join(allowed)}, got {value!r}")
    if unit.check_conv is not None:
        return unit.check_conv(
            target, width, (kh, kw), (dh, dw), kind, rule, first_layer, site or ConvSite()
        )
    dkh, dkw = dilated_kernel(kh, dh), dilated_kernel(kw, dw)
    shape = f"width {width}, kernel {kh}x{kw}, dilation {dh}x{dw} (dilated {dkh}x{dkw})"
    return ConvCheck(
        ok=True,
        n=None,
        rule=None,
        kind=kind,
        width=width,
        dilated_kernel_hw=(dkh, dkw),
        conditions=(),
        failed=(),
        message=f"{target} {kind}, {shape}: the seeds give no convolution width limits "
        f"for {target}; nothing to check",
    )
