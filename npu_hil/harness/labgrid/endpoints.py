"""From a place's resources (as the coordinator publishes them, docs/labgrid-notes.md
"Exporter") to what the harness connects to: an SSH endpoint, a pyserial URL, a power resource
for labgrid's own driver. No labgrid import. Of two resources of one kind, the one named ``ssh``,
``console`` or ``power`` is taken (labgrid's named matches rename resources), else it is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from npu_hil.harness.labgrid.errors import LabgridError

POWER_DRIVERS: Mapping[str, str] = MappingProxyType(
    {
        # The pairs labgrid-client's own ``power`` command uses.
        "NetworkPowerPort": "NetworkPowerDriver",
        "PDUDaemonPort": "PDUDaemonDriver",
        "TasmotaPowerPort": "TasmotaPowerDriver",
        "NetworkUSBPowerPort": "USBPowerDriver",
        "NetworkSiSPMPowerPort": "SiSPMPowerDriver",
        "NetworkYKUSHPowerPort": "YKUSHPowerDriver",
    }
)
SERIAL_SCHEMES: Mapping[str, str] = MappingProxyType({"rfc2217": "rfc2217", "raw": "socket"})
PREFERRED_NAMES = {"ssh": "ssh", "serial": "console", "power": "power"}


@dataclass(frozen=True)
class ResourceState:
    """One resource of an acquired place: its class, its name in the place (after a named
    match's rename), its parameters and labgrid's ``extra`` (proxy hints), and availability."""

    cls: str
    name: str
    params: Mapping[str, Any]
    extra: Mapping[str, Any] = field(default_factory=dict)
    avail: bool = True


@dataclass(frozen=True)
class SshEndpoint:
    host: str
    port: int
    user: str | None


@dataclass(frozen=True)
class SerialEndpoint:
    url: str
    baudrate: int


@dataclass(frozen=True)
class PowerEndpoint:
    """A power resource and the labgrid driver class that switches it."""

    resource: ResourceState
    driver: str


@dataclass(frozen=True)
class PlaceEndpoints:
    """What an acquired place offers the harness; any part may be missing."""

    place: str
    ssh: SshEndpoint | None = None
    serial: SerialEndpoint | None = None
    power: PowerEndpoint | None = None


def _pick(place: str, kind: str, found: Sequence[ResourceState]) -> ResourceState | None:
    if len(found) <= 1:
        return found[0] if found else None
    preferred = [r for r in found if r.name == PREFERRED_NAMES[kind]]
    if len(preferred) == 1:
        return preferred[0]
    names = ", ".join(f"{r.cls}/{r.name}" for r in found)
    raise LabgridError(
        f"place {place}: {len(found)} {kind} resources ({names}); name the one to use "
        f"{PREFERRED_NAMES[kind]!r} with a named match (labgrid-client add-named-match)"
    )


def _unavailable(place: str, resource: ResourceState) -> LabgridError:
    return LabgridError(
        f"place {place}: resource {resource.cls}/{resource.name} is not available "
        "(is its exporter running and the device present?)"
    )


def _ssh(place: str, resource: ResourceState) -> SshEndpoint:
    # A password in the resource is ignored on purpose: the SSH transport logs in with keys only,
    # and a password published by an exporter would end up in logs and reports.
    address = str(resource.params.get("address") or "")
    if not address:
        raise LabgridError(f"place {place}: NetworkService {resource.name} has no address")
    if "%" in address:
        # A link-local address with an interface is only reachable through the exporter host
        # (labgrid proxies it over SSH); the harness connects directly.
        raise LabgridError(
            f"place {place}: NetworkService {resource.name} address {address!r} names an "
            "interface; only addresses reachable from this host are supported"
        )
    port = resource.params.get("port", 22)
    username = resource.params.get("username")
    return SshEndpoint(
        host=address,
        port=int(port) if port is not None else 22,
        user=str(username) if username else None,
    )


def _serial(place: str, resource: ResourceState) -> SerialEndpoint:
    host, port = resource.params.get("host"), resource.params.get("port")
    if not host or not port:
        raise _unavailable(place, resource)
    protocol = str(resource.params.get("protocol") or "rfc2217")
    scheme = SERIAL_SCHEMES.get(protocol)
    if scheme is None:
        raise LabgridError(
            f"place {place}: NetworkSerialPort {resource.name} protocol {protocol!r}: expected "
            f"one of {', '.join(SERIAL_SCHEMES)}"
        )
    speed = resource.params.get("speed") or 115200
    host = f"[{host}]" if ":" in str(host) and not str(host).startswith("[") else host  # IPv6
    url = f"{scheme}://{host}:{int(port)}"
    return SerialEndpoint(url=url, baudrate=int(speed))


def endpoints_of(place: str, resources: Sequence[ResourceState]) -> PlaceEndpoints:
    """The SSH, serial and power endpoints among an acquired place's resources."""
    kinds = {"NetworkService": "ssh", "NetworkSerialPort": "serial"}
    kinds.update(dict.fromkeys(POWER_DRIVERS, "power"))
    ssh, serial, power = (
        _pick(place, kind, [r for r in resources if kinds.get(r.cls) == kind])
        for kind in ("ssh", "serial", "power")
    )
    for chosen in (ssh, serial, power):
        if chosen is not None and not chosen.avail:
            raise _unavailable(place, chosen)
    return PlaceEndpoints(
        place=place,
        ssh=_ssh(place, ssh) if ssh else None,
        serial=_serial(place, serial) if serial else None,
        power=PowerEndpoint(power, POWER_DRIVERS[power.cls]) if power else None,
    )
