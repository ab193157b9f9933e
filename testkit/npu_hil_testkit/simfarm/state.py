"""``state.json``: what a running simulated farm consists of, so a later command can report on
it and stop it. Written atomically (a temporary file renamed over the old one) after every
process that starts, so a farm whose ``up`` died half-way can still be brought down."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from typing_extensions import TypedDict

from npu_hil.harness.files import InputFileError, read_regular
from npu_hil_testkit.simfarm.errors import SimFarmError
from npu_hil_testkit.simfarm.procs import ProcessDocument, ProcessRecord

__all__ = ["STATE_FILE", "FarmBoard", "FarmState", "load_state", "remove_state", "save_state"]

STATE_FILE = "state.json"
FORMAT = 1


@dataclass(frozen=True)
class FarmBoard:
    """One simulated board: ``transport`` is ``ssh`` or ``serial``; ``address`` is
    ``127.0.0.1:<port>`` for SSH and the device path or URL for serial."""

    name: str
    target: str
    transport: str
    address: str
    workdir: str

    def to_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "target": self.target,
            "transport": self.transport,
            "address": self.address,
            "workdir": self.workdir,
        }


class StateDocument(TypedDict):
    """The farm's state file (:meth:`FarmState.to_dict`), read back by ``from_dict``."""

    format: int
    dir: str
    inventory: str
    user: str
    started: str
    complete: bool
    boards: list[dict[str, str]]
    processes: list[ProcessDocument]
    ports: dict[str, int]


@dataclass(frozen=True)
class FarmState:
    """A farm in ``dir``. ``complete`` is False while ``up`` is still starting processes."""

    dir: Path
    inventory: Path
    user: str
    started: str
    boards: tuple[FarmBoard, ...] = ()
    processes: tuple[ProcessRecord, ...] = ()
    complete: bool = False
    ports: Mapping[str, int] = field(default_factory=dict)

    def with_process(self, record: ProcessRecord) -> FarmState:
        ports = dict(self.ports)
        if record.port is not None:
            ports[record.name] = record.port
        return replace(self, processes=(*self.processes, record), ports=ports)

    def to_dict(self) -> StateDocument:
        return {
            "format": FORMAT,
            "dir": str(self.dir),
            "inventory": str(self.inventory),
            "user": self.user,
            "started": self.started,
            "complete": self.complete,
            "boards": [board.to_dict() for board in self.boards],
            "processes": [record.to_dict() for record in self.processes],
            "ports": dict(self.ports),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: Path) -> FarmState:
        if data.get("format") != FORMAT:
            raise SimFarmError(
                f"{source}: state format {data.get('format')!r}, this npu-hil reads {FORMAT}"
            )
        try:
            boards, processes = _records(data, "boards"), _records(data, "processes")
            ports = data.get("ports", {})
            if not isinstance(ports, Mapping):
                raise TypeError(f"ports must be an object, got {type(ports).__name__}")
            state = cls(
                dir=Path(_text(data, "dir")),
                inventory=Path(_text(data, "inventory")),
                user=_text(data, "user"),
                started=_text(data, "started"),
                complete=bool(data["complete"]),
                boards=tuple(
                    FarmBoard(**{key: _text(board, key) for key in board}) for board in boards
                ),
                processes=tuple(ProcessRecord.from_dict(p) for p in processes),
                ports={str(k): _port(v) for k, v in ports.items()},
            )
            return state
        except (KeyError, TypeError, ValueError) as exc:
            raise SimFarmError(f"{source}: malformed farm state ({exc!r})") from None


MAX_STATE_BYTES = 16 << 20
"""A farm's state.json: a few kilobytes per board."""


def _records(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = data[key]
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise TypeError(f"{key} must be a list of objects, got {json.dumps(value)[:80]}")
    return value


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str) or "\0" in value:
        raise TypeError(f"{key} must be a string without NUL, got {json.dumps(value)[:80]}")
    return value


def _port(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ValueError(f"a port must be an integer from 1 to 65535, got {value!r}")
    return value


def load_state(folder: Path) -> FarmState | None:
    """The farm recorded in ``folder``, or None when there is none."""
    path = folder / STATE_FILE
    if not os.path.lexists(path):
        return None
    try:
        text = read_regular(path, "the farm's state file", MAX_STATE_BYTES).decode("utf-8")
        data = json.loads(text)
    except InputFileError as exc:
        raise SimFarmError(f"{exc.message}; remove it by hand") from None
    except (ValueError, RecursionError) as exc:
        raise SimFarmError(f"{path}: not valid JSON ({exc}); remove it by hand") from None
    if not isinstance(data, dict):
        raise SimFarmError(f"{path}: expected a JSON object; remove it by hand")
    return FarmState.from_dict(data, path)


def save_state(state: FarmState) -> Path:
    path = state.dir / STATE_FILE
    temporary = path.with_name(f".{STATE_FILE}.{os.getpid()}")
    temporary.write_text(json.dumps(state.to_dict(), indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)
    return path


def remove_state(folder: Path) -> None:
    (folder / STATE_FILE).unlink(missing_ok=True)
