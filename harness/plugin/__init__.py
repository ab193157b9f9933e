"""The npu-hil pytest plugin (entry point ``pytest11``).

Inert until used: installed in any environment it registers its options, markers and fixtures and
nothing else. The inventory is read, boards are locked and a report folder is created only when a
test asks for a board (the ``board`` or ``run_model`` fixture, or a ``soc``/``vendor`` marker).

One feature per module:

- :mod:`harness.plugin` — options, markers and the ``codec`` fixture (this module);
- :mod:`harness.plugin.farm` — the farm, parametrisation over boards, the ``board`` fixture;
- :mod:`harness.plugin.run` — the ``run_model`` fixture, retries, :func:`assert_run_ok`;
- :mod:`harness.plugin.outcomes` — infrastructure failures reported as errors, not failures;
- :mod:`harness.plugin.records` — one record per test, JUnit properties, the run's report;
- :mod:`harness.plugin.simfarm` — ``--simfarm``: the board tests over real SSH and serial links.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from npu_hil.harness.plugin.assertion import assert_run_ok

__all__ = ["assert_run_ok"]

pytest_plugins = [
    # Dependencies first: a plugin module imported before pytest registers it escapes assertion
    # rewriting and warns.
    "npu_hil.harness.plugin.records",
    "npu_hil.harness.plugin.farm",
    "npu_hil.harness.plugin.outcomes",
    "npu_hil.harness.plugin.run",
    "npu_hil.harness.plugin.simfarm",
]

MARKERS = (
    "soc(*names): run this test on boards of these SoCs (the targets of npu-hil targets list)",
    "vendor(*names): run this test on boards of these vendors (the vendor units' names)",
    "hw_only: run only on real hardware, never on a simulated board",
    "sim_only: run only on simulated boards",
    "layout(*names): the NPU layouts this test exercises",
    # Board cases carry xdist_group(board): registered here too, so --strict-markers passes
    # where pytest-xdist is not installed.
    "xdist_group(name): pytest-xdist --dist loadgroup runs a group's tests on one worker",
)
BACKENDS = ("auto", "sim", "hw")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("npu-hil", "npu-hil: NPU boards in the loop")
    group.addoption(
        "--inventory",
        metavar="FILE",
        default=None,
        help="the board inventory (default: inventory.yaml in the rootdir, when present)",
    )
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
        "--reports",
        metavar="DIR",
        default="reports",
        help="the reports root; each run writes reports/<run-id>/ (default: reports/)",
    )
    group.addoption(
        "--compare-with",
        metavar="RUN",
        default=None,
        help="compare the run with this run (an id under the reports root, or a folder) instead "
        "of the last complete run of the same suite, inventory and selection",
    )
    group.addoption(
        "--keep-remote",
        action="store_true",
        default=False,
        help="keep the job folders on the boards after each run (for debugging)",
    )
    group.addoption(
        "--hil-retries",
        type=int,
        default=1,
        metavar="N",
        help="retries of a model run after a TransportError or timeout, with backoff (default 1)",
    )
    group.addoption(
        "--hil-breaker",
        type=int,
        default=3,
        metavar="N",
        help="mark a board unhealthy after N infrastructure failures in a row: its remaining "
        "tests error at once with the cause (default 3; 0: never)",
    )
    parser.addini(
        "npu_hil_retry_backoff",
        "seconds before the first retry of a model run; doubled for each further retry",
        default="1.0",
    )


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    if config.getoption("hil_retries", 1) < 0:
        raise pytest.UsageError("--hil-retries must be 0 or more")
    if config.getoption("hil_breaker", 3) < 0:
        raise pytest.UsageError("--hil-breaker must be 0 or more")


@pytest.fixture
def codec() -> ModuleType:
    """The host codec, :mod:`harness.codec` (``codec.get_layout(...)``)."""
    import npu_hil.harness.codec

    return npu_hil.harness.codec
