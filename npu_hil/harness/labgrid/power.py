"""Switching a place's power with labgrid's own power drivers, as labgrid-client does: its power
resource rebuilt on a throw-away ``Target`` with its ``extra`` (proxy hints of an isolated
exporter), so every PDU labgrid supports works here (docs/labgrid-notes.md, "Exporter")."""

from __future__ import annotations

import importlib
import logging
from typing import Any, Literal

from npu_hil.harness.labgrid.endpoints import PowerEndpoint
from npu_hil.harness.labgrid.errors import LabgridError, LabgridMissingError

log = logging.getLogger(__name__)

PowerAction = Literal["on", "off", "cycle"]


def switch_power(place: str, power: PowerEndpoint, action: PowerAction, *, delay: float) -> None:
    """Switch the place's power ``on``, ``off`` or ``cycle`` it (off, ``delay`` seconds, on).
    Any failure of the PDU or its driver is a LabgridError naming the place."""
    try:
        labgrid: Any = importlib.import_module("labgrid")
    except ImportError as exc:  # pragma: no cover - exercised where labgrid is absent
        raise LabgridMissingError(str(exc)) from exc

    resource = power.resource
    target_factory = labgrid.target_factory
    target = labgrid.Target(f"npu-hil-{place}")
    try:
        made: Any = target_factory.make_resource(
            target, resource.cls, resource.name, dict(resource.params)
        )
        made.extra = dict(resource.extra)
        driver_cls = target_factory.class_from_string(power.driver)
        driver: Any = driver_cls(target, name=None)
        if hasattr(driver, "delay"):
            driver.delay = float(delay)
        target.activate(driver)
        log.info("%s: power %s through %s (%s)", place, action, power.driver, resource.cls)
        getattr(driver, action)()
    except Exception as exc:  # labgrid's drivers raise whatever their PDU library raises
        raise LabgridError(
            f"place {place}: power {action} through labgrid {power.driver} "
            f"({resource.cls} {resource.name}): {type(exc).__name__}: {exc}"
        ) from None
    finally:
        try:
            target.deactivate_all_drivers()
        except Exception as exc:  # cleanup must not hide the action's own outcome
            log.debug("%s: deactivating labgrid drivers: %s", place, exc)
