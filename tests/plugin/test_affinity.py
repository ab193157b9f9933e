"""Which board a case's node id names, for the board-aware xdist scheduler."""

from __future__ import annotations

import pytest

from npu_hil.harness.plugin.affinity import board_of

BOARDS = ["rk3588-01", "rk3588-01-b", "kl730-01", "rdk-x5-01", "lab/a"]


@pytest.mark.parametrize(
    ("nodeid", "expected"),
    [
        ("suite/test_a.py::test_x[rk3588-01]", "rk3588-01"),
        ("suite/test_a.py::test_x[2048-rk3588-01]", "rk3588-01"),
        ("suite/test_a.py::test_x[rk3588-01-b-7]", "rk3588-01-b"),  # the longer name wins
        ("suite/test_a.py::test_x[3-rdk-x5-01-uint8]", "rdk-x5-01"),
        ("suite/test_a.py::test_x[lab/a]", "lab/a"),
        ("suite/test_a.py::test_x[rk3588-no-board]", None),  # a placeholder, no board
        ("suite/test_a.py::test_x[rk3588-011]", None),  # parts match whole, not by prefix
        ("suite/test_a.py::test_x", None),
        ("suite/test_a.py::Test::test_x[kl730-01]", "kl730-01"),
    ],
)
def test_board_of(nodeid: str, expected: str | None) -> None:
    assert board_of(nodeid, BOARDS) == expected
