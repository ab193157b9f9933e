"""``--simfarm ssh|serial|ssh,serial``: the run's board tests on simulated boards behind real links
(docs/farm/simfarm.md). The controller starts the farm (:mod:`npu_hil_testkit.simfarm`), points
``--inventory`` at it and selects ``--backend hw``; workers get its inventory in ``workerinput``."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

INVENTORY_KEY = "npu_hil_simfarm_inventory"
TRANSPORTS = ("ssh", "serial")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("npu-hil")
    group.addoption(
        "--simfarm",
        metavar="KINDS",
        help="run the board tests on simulated boards behind a real sshd (ssh) and/or serial "
        "consoles (serial) on 127.0.0.1, started for this run: ssh, serial or ssh,serial",
    )
    group.addoption(
        "--simfarm-serial",
        choices=("pty", "rfc2217"),
        default="pty",
        help="how --simfarm serves its serial consoles: a pty device, or ser2net's RFC 2217 "
        "on 127.0.0.1 (default: pty)",
    )


def transports_of(option: str) -> tuple[str, ...]:
    """``ssh,serial`` → ``("ssh", "serial")``; anything else is a usage error naming the choices."""
    kinds = tuple(dict.fromkeys(k.strip() for k in option.split(",") if k.strip()))
    unknown = [k for k in kinds if k not in TRANSPORTS]
    if not kinds or unknown:
        raise pytest.UsageError(
            f"--simfarm {option!r}: expected ssh, serial or ssh,serial"
            + (f" (unknown: {', '.join(unknown)})" if unknown else "")
        )
    return kinds


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    option = config.getoption("simfarm", None)
    if option is None:
        return
    kinds = transports_of(option)
    if config.getoption("inventory", None):
        raise pytest.UsageError("--simfarm writes its own inventory; leave out --inventory")
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None:
        inventory = workerinput.get(INVENTORY_KEY)
        if inventory is None:  # pragma: no cover - the controller always sends it
            raise pytest.UsageError("--simfarm: the controller sent no inventory")
    else:
        inventory = _start(config, kinds)
    config.option.inventory = inventory
    config.option.backend = "hw"


def _start(config: pytest.Config, kinds: tuple[str, ...]) -> str:
    from npu_hil.harness.errors import MissingTestSupportError, NpuHilError, has_test_support
    from npu_hil.harness.folders import default_workdir, private_dir

    if not has_test_support():
        raise pytest.UsageError(MissingTestSupportError("--simfarm").message)
    from npu_hil_testkit.simfarm import down, up
    from npu_hil_testkit.simfarm.ledger import FOLDER_PREFIX, SimFarmLedger

    # A run killed with SIGKILL left its farm running: stopped and removed here.
    ledger = SimFarmLedger(private_dir(default_workdir()))
    ledger.reap()
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
    ledger.add(folder)

    def stop() -> None:
        try:
            down(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            ledger.remove(folder)

    try:
        state = up(
            folder,
            targets=config.getoption("target") or None,
            transports=kinds,
            serial=config.getoption("simfarm_serial"),
        )
    except NpuHilError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        ledger.remove(folder)
        raise pytest.UsageError(f"--simfarm: {exc.message}") from None
    config.add_cleanup(stop)
    return str(state.inventory)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: each worker reaches the controller's farm."""
    inventory = node.config.getoption("inventory", None)
    if node.config.getoption("simfarm", None) is not None and inventory:
        node.workerinput[INVENTORY_KEY] = inventory
