"""``--sim-fault BOARD=FAULT[:k=v,...]``: a fault in every job of a simulated board for a whole run
(docs/model-developer/figures.md; the faults: :mod:`npu_hil.harness.sim.faults`). A value reads as
an integer, else a number, else text. The faults are no part of the run key (a rigged run compares
with a clean one) and are recorded in the run's meta (``sim_faults``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from typing_extensions import TypedDict

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.farm.inventory import SIM_ADAPTER, Inventory

SYNTAX = "BOARD=FAULT[:key=value,...]"
EXAMPLE = "NAME=slow:percent=20"


class SimFaultError(NpuHilError):
    """A ``--sim-fault`` that cannot be applied."""


class BoardFaultDocument(TypedDict):
    """A ``--sim-fault`` in summary.json's ``meta.sim_faults``: its board and fault mapping."""

    board: str
    fault: dict[str, Any]


@dataclass(frozen=True)
class BoardFault:
    """One fault for one board: ``fault`` is the fault's mapping (``{"name": ..., **params}``)."""

    board: str
    fault: Mapping[str, Any]

    def to_dict(self) -> BoardFaultDocument:
        return {"board": self.board, "fault": dict(self.fault)}


def _value(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def parse_board_fault(text: str) -> BoardFault:
    """``BOARD=FAULT[:key=value,...]`` checked as a fault (SimFaultError otherwise)."""
    where = f"--sim-fault {text!r}"
    board, sep, rest = text.partition("=")
    name, _, listed = rest.partition(":")
    board, name = board.strip(), name.strip()
    if not sep or not board or not name:
        raise SimFaultError(f"{where}: expected {SYNTAX}, e.g. {EXAMPLE}")
    params: dict[str, Any] = {}
    for item in listed.split(",") if listed.strip() else []:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise SimFaultError(f"{where}: parameter {item!r} is not key=value ({SYNTAX})")
        if key in params:
            raise SimFaultError(f"{where}: parameter {key!r} given twice")
        params[key] = _value(value.strip())
    from npu_hil.harness.sim.faults import Fault
    from npu_hil.harness.simkit.errors import SimConfigError

    try:
        fault = Fault(name, params)
    except SimConfigError as exc:
        raise SimFaultError(f"{where}: {exc.message}") from None
    return BoardFault(board, fault.to_dict())


def parse_board_faults(texts: Iterable[str]) -> tuple[BoardFault, ...]:
    return tuple(parse_board_fault(text) for text in texts)


def _runs_simulated(board: Any, backend: str) -> bool:
    if backend == "hw":
        return False
    return (
        backend == "sim"
        or board.simulated
        or board.adapter == SIM_ADAPTER
        or (backend == "auto" and board.fallback == "sim")
    )


def sim_fault_problem(
    inventory: Inventory, backend: str, faults: Sequence[BoardFault]
) -> str | None:
    """Why a fault cannot go to its board under ``backend`` (the first), or None. A hardware
    board with ``fallback: sim`` is accepted under ``--backend auto``: the fault applies when
    it runs simulated."""
    names = [b.name for b in inventory.boards]
    for item in faults:
        where = f"--sim-fault {item.board}={item.fault['name']}"
        if item.board not in names:
            listed = ", ".join(names) or "none"
            return f"{where}: no such board in {inventory.source} (its boards: {listed})"
        board = inventory.board(item.board)
        if not _runs_simulated(board, backend):
            why = (
                "--backend hw runs no simulated board"
                if backend == "hw"
                else f"it is real hardware ({board.backend}) without fallback: sim"
            )
            return f"{where}: {item.board} is not a simulated board: {why}"
    return None


def selection_problems(
    inventory: Inventory,
    targets: Sequence[str],
    boards: Sequence[str],
    backend: str,
    faults: Sequence[BoardFault],
    runtime: str | None = None,
) -> str | None:
    """Why ``--target``/``--board``, ``--sim-fault`` or ``--runtime`` do not fit ``inventory``
    (the first), or None."""
    from npu_hil.harness.farm.selection import runtime_problem, selection_problem

    return (
        selection_problem(inventory, targets, boards)
        or sim_fault_problem(inventory, backend, faults)
        or runtime_problem(inventory, runtime)
    )


def faults_by_board(faults: Iterable[BoardFault]) -> dict[str, list[dict[str, Any]]]:
    """Board name → its faults in the order given, as ``adapter_options["faults"]`` takes them."""
    found: dict[str, list[dict[str, Any]]] = {}
    for item in faults:
        found.setdefault(item.board, []).append(dict(item.fault))
    return found
