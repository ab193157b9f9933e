"""The npu-hil pytest plugin (entry point ``pytest11``).

Inert until used: installed in any environment it registers its markers and the ``codec``
fixture and nothing else, so it never changes another project's test run.
"""

from __future__ import annotations

from types import ModuleType

import pytest

MARKERS = (
    "soc(*names): run this test on boards of these SoCs (e.g. rk3588, kl730, rdk-x5)",
    "vendor(*names): run this test on boards of these vendors (rockchip, kneron, horizon)",
    "hw_only: run only on real hardware, never on a simulated board",
    "sim_only: run only on simulated boards",
    "layout(*names): the NPU layouts this test exercises",
)


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)


@pytest.fixture
def codec() -> ModuleType:
    """The host codec, :mod:`harness.codec` (``codec.get_layout(...)``)."""
    import harness.codec

    return harness.codec
