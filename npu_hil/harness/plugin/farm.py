"""The farm in pytest: the inventory (read only when a test asks for a board), board tests
parametrised over the matching boards, the ``farm`` and ``board`` fixtures, and board health
(docs/model-developer/tests.md#choosing-boards). Recovery is the farm library's
(:mod:`npu_hil.harness.farm.recovery`); this module maps the options onto it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from npu_hil.harness.farm.defaults import (
    BACKENDS,
    DEFAULT_BACKOFF_S,
    DEFAULT_RETRIES,
    DEFAULT_THRESHOLD,
)
from npu_hil.harness.plugin.inventory import health_key, inventory_path
from npu_hil.harness.plugin.records import filters_text, item_info

if TYPE_CHECKING:
    from npu_hil.harness.farm.farm import Farm
    from npu_hil.harness.farm.inventory import Inventory
    from npu_hil.harness.farm.recovery import RetryPolicy
    from npu_hil.harness.farm.session import BoardSession
    from npu_hil.harness.plugin.sim_faults import BoardFault

BOARD = "board"
MARKERS = (
    "soc(*names): run this test on boards of these SoCs (the targets of npu-hil targets list)",
    "vendor(*names): run this test on boards of these vendors (the vendor units' names)",
    "hw_only: run only on real hardware, never on a simulated board",
    "sim_only: run only on simulated boards",
    "layout(*names): the NPU layouts this test exercises",
    # Board cases carry xdist_group(board): registered here too, so --strict-markers passes
    # where pytest-xdist is not installed.
    "xdist_group(name): pytest-xdist --dist loadgroup runs a group's tests on one worker",
    "npu_hil_filtered: a case whose boards --target/--board left out (deselected)",
)
BACKOFF_INI = "npu_hil_retry_backoff"
DEFAULT_AGENTS = 16
"""Live agents per pytest process: about 55 MB each (PSS), so two workers stay under 2 GB
however many boards the farm has."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("npu-hil")
    group.addoption(
        "--backend",
        choices=BACKENDS,
        default="auto",
        help="auto: hardware where the inventory has it, falling back to simulated boards "
        "where allowed; sim: simulated boards only; hw: hardware only (default: auto)",
    )
    group.addoption(
        "--target",
        action="append",
        default=[],
        metavar="SOC",
        help="run board tests only on boards of this target (repeatable)",
    )
    group.addoption(
        "--board",
        action="append",
        default=[],
        metavar="NAME",
        help="run board tests only on this board (repeatable)",
    )
    group.addoption(
        "--keep-remote",
        action="store_true",
        help="keep each job's files on its board, in jobs/<job id>-<nonce>/ of the board's "
        "workdir (for debugging)",
    )
    group.addoption(
        "--sim-fault",
        action="append",
        default=[],
        metavar="BOARD=FAULT[:key=value,...]",
        help="inject a fault into every job of a simulated board, e.g. "
        "NAME=slow:percent=20 (repeatable; faults: npu_hil.harness.sim.faults); not part of the "
        "run key, recorded in the report",
    )
    group.addoption(
        "--hil-retries",
        type=int,
        default=DEFAULT_RETRIES,
        metavar="N",
        help="retries of a model run after a TransportError or timeout, with backoff "
        f"(default {DEFAULT_RETRIES})",
    )
    group.addoption(
        "--hil-breaker",
        type=int,
        default=DEFAULT_THRESHOLD,
        metavar="N",
        help="mark a board unhealthy after N infrastructure failures in a row: its remaining "
        f"tests error at once with the cause (default {DEFAULT_THRESHOLD}; 0: never)",
    )
    group.addoption(
        "--hil-agents",
        type=int,
        default=DEFAULT_AGENTS,
        metavar="N",
        help="at most N board agents alive in each pytest process; the least recently used "
        f"ends first and starts again with its board's next job (default {DEFAULT_AGENTS}; "
        "0: no limit)",
    )
    group.addoption(
        "--runtime",
        metavar="NAME",
        help="run on the runtime version NAME of the boards that have it installed (the "
        "inventory's runtimes); boards without it are left out. npu-hil nightly "
        "--runtime-matrix runs the suite once per runtime",
    )
    group.addoption(
        "--clear-health",
        action="append",
        default=[],
        metavar="BOARD",
        help="forget that BOARD is marked bad (its health is kept across runs); its next health "
        "check decides (repeatable)",
    )
    parser.addini(
        BACKOFF_INI,
        "seconds before the first retry of a model run; doubled for each further retry",
        default=str(DEFAULT_BACKOFF_S),
    )


def sim_faults(config: pytest.Config) -> tuple[BoardFault, ...]:
    """``--sim-fault`` parsed (a usage error when one does not parse or names no fault)."""
    given = config.getoption("sim_fault", None) or []
    if not given:
        return ()  # checked in every run: the simulator's fault modules only when asked for
    from npu_hil.harness.plugin.sim_faults import SimFaultError, parse_board_faults

    try:
        return parse_board_faults(given)
    except SimFaultError as exc:
        raise pytest.UsageError(exc.message) from None


def retry_policy(config: pytest.Config) -> RetryPolicy:
    """``--hil-retries`` and ``npu_hil_retry_backoff`` as the farm's retry policy."""
    from npu_hil.harness.farm.recovery import RetryPolicy

    text = str(config.getini(BACKOFF_INI))
    try:
        backoff = float(text)
    except ValueError:
        raise pytest.UsageError(f"{BACKOFF_INI}: expected seconds, got {text!r}") from None
    return RetryPolicy(retries=int(config.getoption("hil_retries")), backoff_s=max(backoff, 0.0))


@dataclass(frozen=True)
class BoardParam:
    """The parameter of one board case: the board's name, or None for a SoC with no board."""

    name: str | None
    target: str
    reason: str = ""


@dataclass
class FarmState:
    """Per-process farm state: nothing is read or created until a board test needs it."""

    config: pytest.Config
    inventory: Inventory | None = None
    error: str | None = None
    farm: Farm | None = None

    def load_inventory(self) -> Inventory:
        """The inventory; an unusable one fails collection with ``file:line:column: ...``.
        With none given or found, the built-in simulated farm (one board per target)."""
        if self.inventory is None and self.error is None:
            from npu_hil.harness.farm.inventory import InventoryError, load_inventory
            from npu_hil.harness.farm.labgrid_boards import resolve_labgrid_boards
            from npu_hil.harness.farm.starter import builtin_inventory

            path = inventory_path(self.config)
            try:
                # The farm's boards: the file's, and the places its labgrid section selects.
                self.inventory = (
                    builtin_inventory()
                    if path is None
                    else resolve_labgrid_boards(load_inventory(path))
                )
            except InventoryError as exc:
                self.error = exc.message
        if self.error is not None:
            pytest.fail(self.error, pytrace=False)
        assert self.inventory is not None
        return self.inventory

    def get_farm(self) -> Farm:
        if self.farm is None:
            from npu_hil.harness.errors import NpuHilError
            from npu_hil.harness.farm.farm import Farm
            from npu_hil.harness.pipeline.golden import golden_job
            from npu_hil.harness.plugin.interrupt import sigterm_interrupts
            from npu_hil.harness.plugin.records import run_id
            from npu_hil.harness.plugin.sim_faults import faults_by_board

            self.farm = Farm(
                self.load_inventory(),
                backend=self.config.getoption("backend"),
                workdir=None,  # the farm's machine-wide default: locks shared by every process
                keep_remote=self.config.getoption("keep_remote"),
                breaker_threshold=self.config.getoption("hil_breaker", DEFAULT_THRESHOLD),
                retry=retry_policy(self.config),
                sim_faults=faults_by_board(sim_faults(self.config)),
                health_job=golden_job,  # the health check runs it through the real agent
                run_id=run_id(self.config),
                runtime=self.config.getoption("runtime", None),
                max_agents=self.config.getoption("hil_agents", DEFAULT_AGENTS) or None,
                health_key=health_key(self.config),
            )
            for name in self.config.getoption("clear_health", None) or []:
                try:
                    self.farm.clear_health(name)
                except NpuHilError as exc:
                    raise pytest.UsageError(f"--clear-health {name}: {exc.message}") from None
            # Boards in use: a SIGTERM from here on closes them and writes the report.
            sigterm_interrupts()
        return self.farm

    def close(self) -> None:
        if self.farm is not None:
            self.farm.close()
            self.farm = None


FARM_KEY = pytest.StashKey[FarmState]()


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    for option in ("hil_retries", "hil_breaker", "hil_agents"):
        if (config.getoption(option, None) or 0) < 0:
            raise pytest.UsageError(f"--{option.replace('_', '-')} must be 0 or more")
    sim_faults(config)  # a --sim-fault that does not parse stops the run before it starts
    config.stash[FARM_KEY] = FarmState(config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """A ``--target``/``--board``/``--sim-fault``/``--runtime`` the inventory cannot serve is a
    usage error before anything runs, not a run of skipped cases that exits 0 (checked once, on
    the controller; without them the inventory is read only when a test asks for a board)."""
    config = session.config
    targets, names = config.getoption("target"), config.getoption("board")
    faults = sim_faults(config)
    runtime = config.getoption("runtime", None)
    if not (targets or names or faults or runtime) or hasattr(config, "workerinput"):
        return
    from npu_hil.harness.plugin.sim_faults import selection_problems

    try:
        inventory = config.stash[FARM_KEY].load_inventory()
    except pytest.fail.Exception:
        return  # an unusable inventory: its file:line:col error comes with the first board test
    backend = config.getoption("backend")
    problem = selection_problems(inventory, targets, names, backend, faults, runtime)
    if problem is not None:
        raise pytest.UsageError(problem)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(FARM_KEY, None)
    if state is not None:
        state.close()


def _marker_names(metafunc: pytest.Metafunc, name: str) -> tuple[str, ...]:
    markers = metafunc.definition.iter_markers(name)
    return tuple(dict.fromkeys(str(arg) for marker in markers for arg in marker.args))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    socs = _marker_names(metafunc, "soc")
    vendors = _marker_names(metafunc, "vendor")
    if BOARD not in metafunc.fixturenames:
        if socs or vendors:
            pytest.fail(
                f"{metafunc.definition.nodeid}: marked soc/vendor but uses neither the board "
                "nor the run_model fixture",
                pytrace=False,
            )
        return
    _check_names(metafunc, socs, vendors)
    state = metafunc.config.stash[FARM_KEY]
    farm = state.get_farm()
    config = metafunc.config
    targets = tuple(config.getoption("target")) or None
    names = tuple(config.getoption("board")) or None
    boards = farm.boards(socs=socs or None, vendors=vendors or None, targets=targets, names=names)
    # Under ``--dist loadgroup`` one worker runs all of a board's tests, so each board's agent
    # starts once and no worker waits on another's board lock: the plugin's scheduler reads the
    # board from this parameter's id (npu_hil.harness.plugin.affinity); xdist_group stays for
    # a pytest whose node ids still carry xdist's own group suffix.
    params = [
        pytest.param(BoardParam(b.name, b.target), id=b.name, marks=pytest.mark.xdist_group(b.name))
        for b in boards
    ]
    served = {b.target for b in boards}
    # What --target/--board leave out is deselected, not a skipped case: only a SoC the
    # inventory has no board for at all stays in the run as a skip that says so.
    unfiltered = (
        farm.boards(socs=socs or None, vendors=vendors or None)
        if targets is not None or names is not None
        else boards
    )
    inventoried = {b.target for b in unfiltered}
    source = state.load_inventory().source  # the farm is built: the inventory is read
    for soc in socs:
        if soc not in served:
            reason = f"no board for SoC {soc} in {source}" + filters_text(config)
            filtered = soc in inventoried
            params.append(_skipped(BoardParam(None, soc, reason), f"{soc}-no-board", filtered))
    if not params:
        what = ", ".join(vendors) if vendors else "any target"
        reason = f"no board for {what} in {source}" + filters_text(config)
        filtered = bool(unfiltered)
        params.append(_skipped(BoardParam(None, "", reason), "no-board", filtered))
    metafunc.parametrize(BOARD, params, indirect=True)


def _check_names(
    metafunc: pytest.Metafunc, socs: tuple[str, ...], vendors: tuple[str, ...]
) -> None:
    """A typo in a marker is a collection error, not a silently skipped test."""
    from npu_hil.targets.registry import VENDOR_OF

    for marker, noun, names, known in (
        ("soc", "SoC", socs, list(VENDOR_OF)),
        ("vendor", "vendor", vendors, sorted(set(VENDOR_OF.values()))),
    ):
        unknown = ", ".join(repr(name) for name in names if name not in known)
        if unknown:
            pytest.fail(
                f"{metafunc.definition.nodeid}: {marker}({unknown}): unknown {noun}; known: "
                f"{', '.join(known)}",
                pytrace=False,
            )


def _skipped(param: BoardParam, case_id: str, filtered: bool = False) -> Any:
    """A case with no board: deselected when the run's filters left its boards out, else a
    skip with the reason."""
    marks = [pytest.mark.skip(reason=param.reason)]
    if filtered:
        marks.append(pytest.mark.npu_hil_filtered)
    return pytest.param(param, id=case_id, marks=marks)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Cases whose boards the run's ``--target``/``--board`` filters left out are deselected
    (reported by pytest as deselected, never as skipped placeholders)."""
    if not (config.getoption("target") or config.getoption("board")):
        return  # nothing was filtered: a run that uses no board pays nothing here
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:  # one marker lookup per item: a farm's run collects thousands
        (dropped if item.get_closest_marker("npu_hil_filtered") else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def farm(pytestconfig: pytest.Config) -> Farm:
    """The session's :class:`~npu_hil.harness.farm.Farm` (built from the inventory on first use)."""
    return pytestconfig.stash[FARM_KEY].get_farm()


@pytest.fixture
def board(request: pytest.FixtureRequest, farm: Farm) -> Iterator[BoardSession]:
    """The test's board as a :class:`~npu_hil.harness.farm.BoardSession`, locked for the test."""
    from npu_hil.harness.errors import NpuHilError
    from npu_hil.harness.farm.recovery import (
        BoardUnhealthyError,
        breaker_event,
        fallback_event,
        unreachable_event,
    )

    param = getattr(request, "param", None)
    if not isinstance(param, BoardParam) or param.name is None:
        reason = param.reason if isinstance(param, BoardParam) else "no board"
        pytest.skip(reason)
    state = request.config.stash[FARM_KEY]
    board_spec = state.load_inventory().board(param.name)
    info = item_info(request.node)
    record = info.record
    record.board, record.target = board_spec.name, board_spec.target
    record.backend = board_spec.backend
    _skip_by_kind(request.node, board_spec.simulated, request.config.getoption("backend"))
    with farm.lock(board_spec):
        # What Farm.ready does, step by step, so the record gets what each step found.
        try:
            farm.check_health(board_spec)  # power-cycled once if it has to be
        except BoardUnhealthyError as exc:
            record.boot_log = farm.condition(board_spec).boot_log
            record.board_events.append(unreachable_event(exc.message))
            raise
        finally:
            record.board_events.extend(farm.condition(board_spec).events)
        try:
            # A board its circuit breaker took out: this test errors at once, with the cause.
            farm.breaker(board_spec).check()
        except NpuHilError as exc:
            record.board_events.append(breaker_event(exc.message))
            raise
        session = farm.session(board_spec)
        record.simulated = session.simulated
        record.backend = "sim" if session.simulated else "hw"
        record.ran_on = record.backend
        info.fallback_reason = session.fallback_reason or ""
        if info.fallback_reason:
            record.board_events.append(fallback_event(info.fallback_reason))
        info.transport = session.transport_kind
        if session.simulated and request.node.get_closest_marker("hw_only") is not None:
            pytest.skip(f"hw_only: {board_spec.name} runs simulated ({info.fallback_reason})")
        try:
            yield session
        finally:
            # A board that rebooted during the test left its boot log on the console.
            record.boot_log += session.take_boot_log()
            record.board_events.extend(session.take_events())


def _skip_by_kind(item: pytest.Item, simulated: bool, backend: str) -> None:
    will_simulate = backend == "sim" or (backend == "auto" and simulated)
    if will_simulate and item.get_closest_marker("hw_only") is not None:
        pytest.skip("hw_only: the board is simulated")
    if not will_simulate and item.get_closest_marker("sim_only") is not None:
        pytest.skip("sim_only: the board is real hardware")


def board_param(item: pytest.Item) -> BoardParam | None:
    """The board case a collected test is (its ``board`` parameter), or None."""
    callspec = getattr(item, "callspec", None)
    param = callspec.params.get(BOARD) if callspec is not None else None
    return param if isinstance(param, BoardParam) else None


def pytest_itemcollected(item: pytest.Item) -> None:
    """Every board case gets a record, including one skipped for want of a board."""
    param = board_param(item)
    if param is not None:
        record = item_info(item).record
        record.board, record.target = param.name, param.target or None
        record.layout = declared_layout(item)


def declared_layout(item: pytest.Item) -> str:
    """The layout a case names: its ``layout`` marker, else a ``layout``/``fmt``/``*_layout``
    parameter; "" when it names none (the model run's layouts are taken then)."""
    marker = item.get_closest_marker("layout")
    if marker is not None and marker.args:
        return "+".join(str(a) for a in marker.args)
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    for name, value in params.items():
        if name in ("layout", "fmt") or name.endswith("_layout"):
            return str(value)
    return ""
