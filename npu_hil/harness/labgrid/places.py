"""Places of a labgrid coordinator as the harness's boards: selected, reserved, acquired, kept,
released (how and why: docs/farm/labgrid.md, "What happens to the places"), and their power
switched with labgrid's own power drivers, as labgrid-client does: the power resource rebuilt on
a throw-away ``Target`` with its ``extra`` (proxy hints of an isolated exporter), so every PDU
labgrid supports works here (docs/labgrid-notes.md, "Exporter")."""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import npu_hil.harness.labgrid.exit_hooks as exit_hooks
from npu_hil.harness.labgrid.config import LabgridConfig, PlaceState
from npu_hil.harness.labgrid.endpoints import PlaceEndpoints, PowerEndpoint, endpoints_of
from npu_hil.harness.labgrid.errors import (
    LabgridError,
    LabgridMissingError,
    PlaceBusyError,
    PlaceLostError,
)
from npu_hil.harness.labgrid.ledger import Holding, PlaceLedger, current_holder

log = logging.getLogger(__name__)

POLL_S = 0.5
"""How often a waiting reservation is polled: a released place goes to the first reservation in
the coordinator's queue at once, and this bounds how long it then sits unused."""
POWER_DELAY_S = 2.0

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


def selected_by_tags(config: LabgridConfig, place: PlaceState) -> bool:
    """Whether the place carries every tag of the configuration (and it has tags)."""
    tags = config.tags
    return bool(tags) and all(place.tags.get(k) == v for k, v in tags.items())


def select_places(config: LabgridConfig, places: Mapping[str, PlaceState]) -> list[PlaceState]:
    """The places ``config`` names or whose tags match, sorted by name; a named place the
    coordinator does not know is a LabgridError listing the ones it knows."""
    missing = [name for name in config.places if name not in places]
    if missing:
        known = ", ".join(sorted(places)) or "none"
        raise LabgridError(
            f"labgrid coordinator {config.coordinator}: no place "
            f"{', '.join(map(repr, missing))} (places: {known})"
        )
    chosen = {name: places[name] for name in config.places}
    for name, place in places.items():
        if selected_by_tags(config, place):
            chosen[name] = place
    return [chosen[name] for name in sorted(chosen)]


@dataclass(frozen=True)
class _Held:
    token: str | None
    shared: bool


class LabgridPlaces:
    """The places of ``config`` on its coordinator, for this process.

    ``workdir`` holds the ledger (the farm's workdir: shared by the processes of one user on
    this host). Connecting releases what dead runs of this host left acquired
    (:attr:`released_stale` lists them). Use as a context manager or call :meth:`close`.
    """

    def __init__(self, config: LabgridConfig, *, workdir: Path) -> None:
        from npu_hil.harness.labgrid.coordinator import CoordinatorClient  # needs labgrid

        self.config = config
        self._client = CoordinatorClient(config.coordinator)
        self.identity = self._client.identity
        self._ledger = PlaceLedger(workdir / "labgrid", config.coordinator)
        self._lock = threading.RLock()
        self._held: dict[str, _Held] = {}
        self._lost: dict[str, str] = {}
        self._closed = False
        self._stop = threading.Event()
        self._refresher: threading.Thread | None = None
        exit_hooks.register(self)
        try:
            self.released_stale = self.release_stale()
        except BaseException:
            self.close()
            raise

    def _filters(self, place: PlaceState) -> dict[str, str]:
        # The tags as well as the name: a place an admin retags out of the pool (say, for
        # maintenance) is then waited for rather than used.
        extra = dict(self.config.tags) if selected_by_tags(self.config, place) else {}
        return {**extra, "name": place.name}

    # --- acquiring -------------------------------------------------------------------------------

    def acquire(self, name: str) -> PlaceEndpoints:
        """Hold the place for this process (a second call is a no-op) and return its endpoints;
        PlaceBusyError when it stays held by someone else past ``wait``."""
        with self._lock:
            if self._closed:
                raise LabgridError(f"place {name}: the labgrid connection is closed")
            if name in self._held:
                self.check(name)
                return self.endpoints(name)
        place = self._client.place(name)
        if place.unmatched is not None:
            raise LabgridError(
                f"place {name}: match {place.unmatched} has no available resource "
                "(is its exporter running?)"
            )
        deadline = time.monotonic() + self.config.wait
        token: str | None = None
        held: _Held | None = None
        why = ""
        try:
            while True:
                token, held, why = self._attempt(place, token)
                if held is not None:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    waited = f"waited {self.config.wait:.0f} s" if self.config.wait else "wait: 0"
                    raise PlaceBusyError(f"place {name}: {why} ({waited})")
                time.sleep(min(POLL_S, remaining))
        finally:
            if held is None and token is not None:
                with contextlib.suppress(LabgridError):
                    self._client.cancel(token)
        with self._lock:
            self._held[name] = held
            self._lost.pop(name, None)
        self._start_refresher()
        how = "shared" if held.shared else "acquired"
        log.info("labgrid place %s %s by %s", name, how, self.identity)
        try:
            return self.endpoints(name)
        except BaseException:
            self.release(name)
            raise

    def _attempt(
        self, place: PlaceState, token: str | None
    ) -> tuple[str | None, _Held | None, str]:
        """One look at the place: (reservation token, what is held or None, why we wait)."""
        name = place.name
        with self._ledger.transaction() as holdings:
            state = self._client.place(name)
            holding = holdings.get(name)
            if holding is not None:
                if not self._ledger.prune(holding):
                    self._release_dead(holding, state)
                    del holdings[name]
                    state = self._client.place(name)
                elif state.acquired != holding.owner:
                    del holdings[name]  # the coordinator says otherwise: the record is stale
                else:
                    holding.holders.append(current_holder())
                    if token is not None and token != holding.token:
                        with contextlib.suppress(LabgridError):
                            self._client.cancel(token)
                    return None, _Held(holding.token, shared=True), ""
            if token is None:
                token = self._client.reserve(self._filters(state), prio=self.config.prio).token
            info = self._client.poll(token)
            if info is None or info.state in ("expired", "invalid"):
                return None, None, f"reservation {token} lapsed ({info.state if info else 'gone'})"
            if info.state == "allocated" and name in info.allocations:
                # Recorded before it is acquired: a run killed in between leaves a record the
                # next start acts on, where a place acquired without one stays acquired for ever.
                holdings[name] = Holding(
                    name, self.identity, token, self._ledger.host, [current_holder()]
                )
                self._ledger.save(holdings)
                try:
                    self._client.acquire(name)
                except PlaceBusyError as exc:
                    del holdings[name]
                    return token, None, exc.message
                return token, _Held(token, shared=False), ""
        if state.acquired:
            return token, None, f"acquired by {state.acquired}"
        if state.reservation:
            return token, None, f"reserved by another client (reservation {state.reservation})"
        return token, None, f"waiting in the coordinator's queue (reservation {token})"

    # --- using -----------------------------------------------------------------------------------

    def check(self, name: str) -> None:
        """PlaceLostError when the refresher found the place taken away; LabgridError when this
        process does not hold it."""
        with self._lock:
            if name in self._lost:
                raise PlaceLostError(f"place {name}: {self._lost[name]}")
            if name not in self._held:
                raise LabgridError(f"place {name} is not held by this process")

    def endpoints(self, name: str) -> PlaceEndpoints:
        """The held place's SSH, serial and power endpoints, read afresh (a restarted exporter
        serves the console on a new port)."""
        self.check(name)
        return endpoints_of(name, self._client.resources(name))

    def power(self, name: str, action: PowerAction, *, delay: float = POWER_DELAY_S) -> None:
        """Switch the held place's power with labgrid's driver for its power resource."""
        found = self.endpoints(name).power
        if found is None:
            raise LabgridError(f"place {name}: no power resource (NetworkPowerPort, ...)")
        switch_power(name, found, action, delay=delay)

    @property
    def held(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(sorted(self._held))

    # --- keeping ---------------------------------------------------------------------------------

    def _start_refresher(self) -> None:
        with self._lock:
            if self._refresher is None and not self._closed:
                self._refresher = threading.Thread(
                    target=self._refresh_loop, name="labgrid-refresh", daemon=True
                )
                self._refresher.start()

    def _refresh_loop(self) -> None:
        while not self._stop.wait(self.config.refresh):
            try:
                self.refresh()
            except LabgridError as exc:
                log.warning("labgrid refresh: %s", exc)

    def refresh(self) -> None:
        """Poll the held places' reservations (keeping them alive) and record any place that is
        no longer acquired by this identity."""
        with self._lock:
            held = dict(self._held)
        if not held:
            return
        if not self._client.connected:
            self._mark_lost(
                held,
                "the connection to the coordinator broke (a restarted "
                "coordinator forgets every acquisition)",
            )
            return
        for entry in held.values():
            if entry.token is not None:
                self._client.poll(entry.token)
        places = self._client.places()
        for name in held:
            state = places.get(name)
            if state is None:
                self._mark_lost([name], "deleted from the coordinator")
            elif state.acquired is None:
                self._mark_lost([name], "released by someone else")
            elif state.acquired != self.identity:
                self._mark_lost([name], f"taken over by {state.acquired}")

    def _mark_lost(self, names: dict[str, _Held] | list[str], why: str) -> None:
        newly: list[_Held] = []
        with self._lock:
            for name in names:
                if name in self._held and name not in self._lost:
                    log.error("labgrid place %s: %s", name, why)
                    self._lost[name] = why
                    newly.append(self._held[name])
        # A reservation still allocated to us would keep everyone else out of a place this run
        # can no longer use.
        for entry in newly:
            if entry.token is not None and self._client.connected:
                with contextlib.suppress(LabgridError):
                    self._client.cancel(entry.token)

    # --- releasing -------------------------------------------------------------------------------

    def _release_holding(self, holding: Holding) -> None:
        # ``owner``: released only if it is still acquired under the recorded identity.
        self._client.release(holding.place, owner=holding.owner)
        if holding.token is not None:
            self._client.cancel(holding.token)

    def _release_dead(self, holding: Holding, state: PlaceState) -> bool:
        """Release what a dead run's record names, if the coordinator still shows that run's
        acquisition, and cancel its reservation; whether a place was released. A run killed
        before its acquire left a record of a place it never held, which another run of the same
        identity (another workdir) may hold now under a reservation of its own."""
        ours = state.acquired == holding.owner and state.reservation in (None, holding.token)
        if ours:
            self._release_holding(holding)
        elif holding.token is not None:
            self._client.cancel(holding.token)
        return ours

    def release_stale(self) -> list[str]:
        """Release the places that runs of this host acquired and that no live process holds any
        more (a run killed with SIGKILL); return their names."""
        released: list[str] = []
        with self._ledger.transaction() as holdings:
            for name, holding in list(holdings.items()):
                if self._ledger.prune(holding):
                    continue
                # A record from another host (a shared workdir) names pids that mean nothing here.
                mine = holding.host == self._ledger.host
                if mine and self._release_dead(holding, self._client.place(name)):
                    log.warning(
                        "labgrid place %s: released, left by a dead run (%s)", name, holding.owner
                    )
                    released.append(name)
                del holdings[name]
        return released

    def release(self, name: str) -> None:
        """Stop holding the place; the coordinator's place is released when no other process of
        this host holds it any more."""
        with self._lock:
            entry = self._held.pop(name, None)
            self._lost.pop(name, None)
        if entry is None:
            return
        me = current_holder()
        with self._ledger.transaction() as holdings:
            holding = holdings.get(name)
            if holding is None:  # not in the ledger: ours alone
                self._release_holding(Holding(name, self.identity, entry.token, self._ledger.host))
                return
            holding.holders = [h for h in holding.holders if h != me]
            if not self._ledger.prune(holding):
                self._release_holding(holding)
                del holdings[name]
        log.info("labgrid place %s released by %s", name, self.identity)

    def close(self) -> None:
        """Release every held place and disconnect. Errors are logged, not raised: closing runs
        at exit and after failures, where there is nobody left to handle them."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            names = list(self._held)
        self._stop.set()
        for name in names:
            try:
                self.release(name)
            except LabgridError as exc:
                log.warning("labgrid place %s: not released: %s", name, exc)
        if self._refresher is not None and self._refresher is not threading.current_thread():
            self._refresher.join(5.0)
        self._client.close()
        exit_hooks.unregister(self)

    def __enter__(self) -> LabgridPlaces:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
