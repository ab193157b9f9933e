"""A synchronous client of a labgrid coordinator, on top of labgrid's own ``ClientSession``
(docs/labgrid-notes.md, "Client API used by the harness"): the session runs on an event loop in
a daemon thread of its own, and every call waits for its coroutine with a deadline. The only
module that imports labgrid (:class:`~npu_hil.harness.labgrid.errors.LabgridMissingError`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from npu_hil.harness.labgrid.config import DEFAULT_PORT, PlaceState, ReservationInfo
from npu_hil.harness.labgrid.endpoints import ResourceState
from npu_hil.harness.labgrid.errors import LabgridError, LabgridMissingError, PlaceBusyError

# labgrid and grpc ship no type information; they are read untyped, as the inventory reads PyYAML.
try:
    grpc: Any = importlib.import_module("grpc")
    ClientSession: Any = importlib.import_module("labgrid.remote.client").ClientSession
    Reservation: Any = importlib.import_module("labgrid.remote.common").Reservation
    pb: Any = importlib.import_module("labgrid.remote.generated.labgrid_coordinator_pb2")
    proxymanager: Any = importlib.import_module("labgrid.util.proxy").proxymanager
    _stub_class: Any = importlib.import_module(
        "labgrid.remote.generated.labgrid_coordinator_pb2_grpc"
    ).CoordinatorStub
except ImportError as exc:  # pragma: no cover - exercised where labgrid is absent
    raise LabgridMissingError(str(exc)) from exc

log = logging.getLogger(__name__)

T = TypeVar("T")

CALL_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 20.0
# The coordinator answers these codes for a place that someone else holds or has reserved.
_BUSY_CODES = ("FAILED_PRECONDITION", "PERMISSION_DENIED")


# labgrid's own keepalive settings for its client channel, plus a subchannel pool of the
# channel's own. grpc shares one TCP connection between channels to the same address by default,
# and the coordinator keys client sessions by the connection's peer address: a second session in
# one process (two farms, a test's observer) would be refused ("Unexpected AssertionError").
CHANNEL_OPTIONS = (
    ("grpc.keepalive_time_ms", 7500),
    ("grpc.keepalive_timeout_ms", 10000),
    ("grpc.http2.ping_timeout_ms", 10000),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.use_local_subchannel_pool", 1),
)


def own_connection(session: Any) -> None:
    """Give a ``ClientSession`` that has not started yet a TCP connection of its own."""
    shared = session.channel
    session.channel = grpc.aio.insecure_channel(session.address, options=list(CHANNEL_OPTIONS))
    session.stub = _stub_class(session.channel)
    # Never used: closing it only frees its resources.
    session.loop.create_task(shared.close())


def _reservation(res: Any) -> ReservationInfo:
    places = tuple(p for group in res.allocations.values() for p in group)
    return ReservationInfo(res.token, res.state.name, places)


class CoordinatorClient:
    """One connection to the coordinator at ``address`` (``host:port``)."""

    def __init__(self, address: str, *, connect_timeout: float = CONNECT_TIMEOUT_S) -> None:
        self.address = proxymanager.get_grpc_address(address, default_port=DEFAULT_PORT)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"labgrid-{self.address}", daemon=True
        )
        self._thread.start()
        self._closed = False
        try:
            self._session: Any = self._call(self._start, connect_timeout, "connect")
        except BaseException:
            self._stop_loop()
            raise
        self.identity = f"{self._session.gethostname()}/{self._session.getuser()}"

    async def _start(self) -> Any:
        session = ClientSession(self.address, self._loop)
        own_connection(session)
        try:
            await session.start()
        except Exception as exc:
            await session.close()
            raise LabgridError(
                f"labgrid coordinator {self.address}: cannot connect ({exc})"
            ) from None
        return session

    # --- plumbing ---------------------------------------------------------------------------------

    def _call(self, make: Callable[[], Coroutine[Any, Any, T]], timeout: float, what: str) -> T:
        if self._closed:
            raise LabgridError(f"labgrid coordinator {self.address}: {what}: client closed")
        future = asyncio.run_coroutine_threadsafe(make(), self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise LabgridError(
                f"labgrid coordinator {self.address}: {what}: no answer within {timeout:.0f} s"
            ) from None

    async def _rpc(self, method: str, request: Any, what: str, *, sync: bool = True) -> Any:
        try:
            response = await getattr(self._session.stub, method)(request, timeout=CALL_TIMEOUT_S)
            # The reply to a request comes before the coordinator's update of the place; a sync
            # round trip makes the mirror show the request's effect before the caller looks.
            if sync:
                await self._session.sync_with_coordinator()
        except grpc.aio.AioRpcError as exc:
            code = exc.code().name
            message = f"labgrid coordinator {self.address}: {what}: {exc.details() or code}"
            if code in _BUSY_CODES:
                raise PlaceBusyError(message) from None
            raise LabgridError(message) from None
        return response

    def _request(
        self, method: str, request: Any, what: str, waited: str = "", *, sync: bool = True
    ) -> Any:
        """One RPC, waited for (``waited`` names it if the wait runs out; default ``what``)."""
        return self._call(
            lambda: self._rpc(method, request, what, sync=sync), CALL_TIMEOUT_S, waited or what
        )

    @property
    def connected(self) -> bool:
        """False once the coordinator's stream broke (it went away or restarted)."""
        return not self._closed and not self._session.stopping.is_set()

    # --- places and resources ---------------------------------------------------------------------

    def places(self) -> dict[str, PlaceState]:
        """Every place, as last published."""

        async def snapshot() -> dict[str, PlaceState]:
            published = [
                ((exporter, group_name, entry.cls, name), entry.avail)
                for exporter, groups in self._session.resources.items()
                for group_name, group in groups.items()
                for name, entry in group.items()
            ]
            resources = [path for path, avail in published if avail]
            out = {}
            for name, place in self._session.places.items():
                unmatched = place.unmatched(resources)
                classes = {path[2] for path, _ in published if place.hasmatch(path)}
                out[name] = PlaceState(
                    name=name,
                    tags=dict(place.tags),
                    acquired=place.acquired,
                    reservation=place.reservation,
                    unmatched=repr(unmatched) if unmatched is not None else None,
                    resource_classes=tuple(sorted(classes)),
                )
            return out

        return self._call(snapshot, CALL_TIMEOUT_S, "list places")

    def place(self, name: str) -> PlaceState:
        places = self.places()
        if name not in places:
            known = ", ".join(sorted(places)) or "none"
            raise LabgridError(
                f"labgrid coordinator {self.address}: no place {name!r} (places: {known})"
            )
        return places[name]

    def resources(self, name: str) -> list[ResourceState]:
        """The resources an acquired place holds, named as the place's matches rename them."""

        async def collect() -> list[ResourceState]:
            place = self._session.places.get(name)
            if place is None:
                raise LabgridError(f"labgrid coordinator {self.address}: no place {name!r}")
            out = []
            for path in place.acquired_resources:
                exporter, group_name, _cls, resource_name = path
                match = place.getmatch(path)
                group = self._session.resources.get(exporter, {}).get(group_name, {})
                entry = group.get(resource_name)
                if entry is None:
                    raise LabgridError(
                        f"place {name}: resource {'/'.join(path)} is orphaned "
                        f"(exporter {exporter} disconnected?)"
                    )
                out.append(
                    ResourceState(
                        cls=entry.cls,
                        name=(match.rename if match is not None and match.rename else None)
                        or resource_name,
                        params=dict(entry.args),
                        extra=dict(entry.extra),
                        avail=bool(entry.avail),
                    )
                )
            return out

        return self._call(collect, CALL_TIMEOUT_S, f"resources of {name}")

    # --- reservations -----------------------------------------------------------------------------

    def reserve(self, filters: Mapping[str, str], *, prio: float = 0.0) -> ReservationInfo:
        """A new reservation for one place matching ``filters`` (tags, and ``name``)."""
        request = pb.CreateReservationRequest(
            filters={"main": pb.Reservation.Filter(filter=dict(filters))}, prio=prio
        )
        reply = self._request("CreateReservation", request, "reserve", sync=False)
        return _reservation(Reservation.from_pb2(reply.reservation))

    def poll(self, token: str) -> ReservationInfo | None:
        """The reservation's state, refreshing its expiry; None when the coordinator no longer
        knows it (cancelled, or expired and removed)."""
        request = pb.PollReservationRequest(token=token)
        try:
            reply = self._request(
                "PollReservation", request, "poll", f"poll reservation {token}", sync=False
            )
        except PlaceBusyError:  # FAILED_PRECONDITION: no such reservation
            return None
        return _reservation(Reservation.from_pb2(reply.reservation))

    def cancel(self, token: str) -> None:
        """Cancel a reservation; one the coordinator no longer knows is fine."""
        request = pb.CancelReservationRequest(token=token)
        with contextlib.suppress(PlaceBusyError):  # the coordinator no longer knows it
            self._request(
                "CancelReservation", request, "cancel", f"cancel reservation {token}", sync=False
            )

    # --- acquire and release ----------------------------------------------------------------------

    def acquire(self, name: str) -> None:
        """Acquire the place for this client's identity; PlaceBusyError when someone else holds
        it, has it reserved, or holds one of its resources through another place."""
        self._request("AcquirePlace", pb.AcquirePlaceRequest(placename=name), f"acquire {name}")

    def release(self, name: str, *, owner: str) -> None:
        """Release the place if, and only if, ``owner`` (``host/user``) still holds it: the
        coordinator checks this atomically, so a place someone else has acquired in the meantime
        is never taken from them."""
        request = pb.ReleasePlaceRequest(placename=name, fromuser=owner)
        self._request("ReleasePlace", request, f"release {name}")

    # --- closing ----------------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._call(self._shutdown, 10.0, "close")
        except LabgridError as exc:
            log.debug("closing the labgrid session: %s", exc)
        finally:
            self._stop_loop()

    async def _shutdown(self) -> None:
        await self._session.stop()
        await self._session.close()

    def _stop_loop(self) -> None:
        self._closed = True
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        if threading.current_thread() is not self._thread:
            self._thread.join(10.0)
        if not self._loop.is_running():
            self._loop.close()
