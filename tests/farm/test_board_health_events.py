"""The health check's events, for the report's board-health section: a board that came back
after a power cycle says so, one that did not says why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from npu_hil.harness.farm.recovery import health_problem


@dataclass
class Health:
    ok: bool
    error: str | None = None


@dataclass
class FakeFarm:
    answers: list[Health]
    cycles: list[str] = field(default_factory=list)

    def health(self, board: Any) -> Health:
        return self.answers.pop(0)

    def power_cycle(self, board: Any) -> None:
        self.cycles.append(board.name)


@dataclass
class Board:
    name: str = "rk3588-02"
    power: object | None = "relay"


def test_a_board_healthy_after_a_power_cycle_records_the_cycle() -> None:
    farm = FakeFarm([Health(False, "ping timed out after 5 s"), Health(True)])
    events: list[str] = []
    assert health_problem(farm, Board(), events) is None  # type: ignore[arg-type]
    assert farm.cycles == ["rk3588-02"]
    assert events == ["power cycled: ping timed out after 5 s; healthy again"]


def test_a_healthy_board_has_no_event() -> None:
    events: list[str] = []
    assert health_problem(FakeFarm([Health(True)]), Board(), events) is None  # type: ignore[arg-type]
    assert events == []


def test_a_board_without_power_control_says_so() -> None:
    events: list[str] = []
    problem = health_problem(FakeFarm([Health(False, "refused")]), Board(power=None), events)  # type: ignore[arg-type]
    assert problem == "board rk3588-02 is unhealthy: refused (no power control to recover it)"
    assert events == []
