"""Which vendor's runtime each simulated target behaves like."""

from __future__ import annotations

from npu_hil.harness.sim.errors import SimConfigError
from npu_hil.targets import horizon, kl730, rockchip

ROCKCHIP = "rockchip"
HORIZON = "horizon"
KNERON = "kneron"

VENDOR_OF: dict[str, str] = {
    **{target: KNERON for target in kl730.TARGETS},
    **{target: ROCKCHIP for target in rockchip.TARGETS},
    **{target: HORIZON for target in horizon.TARGETS},
}

SIM_TARGETS: tuple[str, ...] = tuple(VENDOR_OF)
"""Every target a simulated board can be: kl730, the eleven Rockchip SoCs, the three RDKs."""


def vendor_of(target: str) -> str:
    try:
        return VENDOR_OF[target]
    except (KeyError, TypeError):
        raise SimConfigError(
            f"unknown target {target!r}; a simulated board can be: {', '.join(SIM_TARGETS)}"
        ) from None
