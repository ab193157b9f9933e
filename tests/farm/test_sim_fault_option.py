"""``--sim-fault BOARD=FAULT[:key=value,...]``: what parses, what is refused and why, and which
boards may carry a fault (those that run simulated)."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu_hil.harness.farm.inventory import load_inventory
from npu_hil.harness.farm.starter import builtin_inventory
from npu_hil.harness.plugin.sim_faults import (
    BoardFault,
    SimFaultError,
    faults_by_board,
    parse_board_fault,
    parse_board_faults,
    sim_fault_problem,
)

MIXED = """\
boards:
  - {name: sim-01, target: rk3588, backend: sim, transport: local}
  - name: real-01
    target: rk3566
    backend: hw
    transport: {kind: ssh, host: 127.0.0.1, user: root}
  - name: spare-01
    target: kl730
    backend: hw
    fallback: sim
    transport: {kind: ssh, host: 127.0.0.1, user: root}
"""


@pytest.mark.parametrize(
    ("text", "name", "fault"),
    [
        ("rk3588-01=slow", "rk3588-01", {"name": "slow"}),
        ("rk3588-01=slow:percent=20", "rk3588-01", {"name": "slow", "percent": 20}),
        ("a=slow:percent=12.5", "a", {"name": "slow", "percent": 12.5}),
        (
            "kl730-01=noisy-latency:percent=30,seed=7",
            "kl730-01",
            {"name": "noisy-latency", "percent": 30, "seed": 7},
        ),
        (
            "x=accuracy-drift:lsb=2,fraction=0.5,applies_to=all",
            "x",
            {"name": "accuracy-drift", "lsb": 2, "fraction": 0.5, "applies_to": "all"},
        ),
        (" b = dirty-padding : value = 7 ", "b", {"name": "dirty-padding", "value": 7}),
    ],
)
def test_a_fault_spec_parses(text: str, name: str, fault: dict[str, object]) -> None:
    parsed = parse_board_fault(text)
    assert parsed == BoardFault(name, fault)
    assert parsed.to_dict() == {"board": name, "fault": fault}
    assert type(parsed.fault.get("percent", 0)) is type(fault.get("percent", 0))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("slow", "expected BOARD=FAULT[:key=value,...]"),
        ("=slow", "expected BOARD=FAULT"),
        ("b=", "expected BOARD=FAULT"),
        ("b=melt", "unknown fault 'melt'; faults: wrong-alignment"),
        ("b=slow:factor=2", "unknown parameter(s) factor; accepted: percent"),
        ("b=slow:percent", "parameter 'percent' is not key=value"),
        ("b=slow:percent=20,percent=30", "parameter 'percent' given twice"),
        ("b=slow:percent=0", "percent must be a number in (0, 10000]"),
        ("b=slow:percent=fast", "percent must be a number in (0, 10000], got 'fast'"),
        ("b=accuracy-drift:lsb=1.5", "lsb must be an integer >= 1"),
    ],
)
def test_a_bad_spec_is_refused_with_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(SimFaultError) as refused:
        parse_board_fault(text)
    assert refused.value.message.startswith(f"--sim-fault {text!r}: ")
    assert message in refused.value.message


def test_faults_group_by_board_in_order() -> None:
    faults = parse_board_faults(["a=slow", "b=noisy-latency", "a=accuracy-drift:lsb=1"])
    assert faults_by_board(faults) == {
        "a": [{"name": "slow"}, {"name": "accuracy-drift", "lsb": 1}],
        "b": [{"name": "noisy-latency"}],
    }


def test_every_board_of_the_default_farm_takes_a_fault() -> None:
    inventory = builtin_inventory()
    faults = parse_board_faults(f"{b.name}=slow" for b in inventory.boards)
    assert sim_fault_problem(inventory, "auto", faults) is None
    assert sim_fault_problem(inventory, "sim", faults) is None
    problem = sim_fault_problem(inventory, "hw", faults[:1])
    assert problem == (
        f"--sim-fault {inventory.boards[0].name}=slow: {inventory.boards[0].name} is not a "
        "simulated board: --backend hw runs no simulated board"
    )


def test_only_boards_that_run_simulated_take_a_fault(tmp_path: Path) -> None:
    path = tmp_path / "farm.yaml"
    path.write_text(MIXED)
    inventory = load_inventory(path)

    def problem(text: str, backend: str = "auto") -> str | None:
        return sim_fault_problem(inventory, backend, [parse_board_fault(text)])

    assert problem("sim-01=slow") is None
    assert problem("spare-01=slow") is None  # falls back to sim: the fault applies then
    assert problem("real-01=slow") == (
        "--sim-fault real-01=slow: real-01 is not a simulated board: it is real hardware (hw) "
        "without fallback: sim"
    )
    assert problem("real-01=slow", "sim") is None  # --backend sim simulates every board
    unknown = problem("nosuch-01=slow")
    assert unknown is not None
    assert unknown.startswith(f"--sim-fault nosuch-01=slow: no such board in {path}")
    assert "(its boards: sim-01, real-01, spare-01)" in unknown
