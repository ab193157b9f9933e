"""Board health kept across runs (beside the board locks) and the SoC identity check.

The boards here are reached through their transport, as hardware is: a local link whose
``python`` is a wrapper script, running the real agent with the simulated runtime (the
inventory's ``adapter: sim``). The wrapper can be made to fail (a dead board) and points the
agent at a fake device tree (``NPU_HIL_SYSFS_ROOT``), so every step runs the real agent and the
real farm; only the hardware is a script.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.board.boardstate import read_identity
from npu_hil.harness.errors import AgentKilledError
from npu_hil.harness.farm import NO_RETRY, BoardBrokenError, BoardUnhealthyError, Farm
from npu_hil.harness.farm.health_store import (
    BAD,
    CLEARED,
    GOOD,
    MAX_HISTORY,
    POWER_CYCLED,
    RECOVERY_FAILED,
    UNKNOWN,
    HealthDocument,
    HealthStore,
    health_folder,
    state_key,
)
from npu_hil.harness.farm.recovery import board_identity
from npu_hil.harness.pipeline import run_model
from npu_hil.harness.pipeline.golden import golden_job
from npu_hil.targets.identity import judge_identity

ROOT = Path(__file__).resolve().parents[2]
X = {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}
KILLED = [{"name": "crash", "signal": "SIGKILL"}]
REFUSAL = (
    r"(?P<board>[\w-]+) is marked bad since \d{4}-\d\d-\d\d \d\d:\d\dZ: .+; power-cycle it and "
    r"pass a health check to clear, or --clear-health (?P=board)"
)

# The board's python: dead while a file named "dead" lies beside it, the real interpreter
# otherwise, with the board's device tree under "root".
BOARD_PYTHON = """\
#!/bin/sh
here="$(dirname "$0")"
if [ -e "$here/dead" ]; then
    echo "board does not boot" >&2
    exit 3
fi
export NPU_HIL_SYSFS_ROOT="$here/root"
PYTHONPATH="{root}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{python}" "$@"
"""

INVENTORY = """\
boards:
  - name: powered-01
    target: rk3588
    backend: hw
    fallback: none
    adapter: sim
    python: {python}
    transport: local
    power: {{command: {{cycle: [touch, {cycles}]}}}}
  - name: bare-01
    target: rk3588
    backend: hw
    fallback: none
    adapter: sim
    python: {python}
    transport: local
  - name: sim-01
    target: rk3588
    backend: sim
    transport: local
"""


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.delenv("NPU_HIL_HEALTH_DIR")  # kept where a farm keeps it: under its inventory
    board = tmp_path / "board"
    (board / "root" / "proc" / "device-tree").mkdir(parents=True)
    python = board / "python"
    python.write_text(BOARD_PYTHON.format(root=ROOT, python=sys.executable))
    python.chmod(0o755)
    inventory = tmp_path / "inventory.yaml"
    cycles = tmp_path / "power-cycles"
    inventory.write_text(INVENTORY.format(python=python, cycles=cycles))
    return {"board": board, "inventory": inventory, "workdir": tmp_path / "farm", "cycles": cycles}


def farm(lab: dict[str, Path], **options: object) -> Farm:
    options.setdefault("retry", NO_RETRY)
    return Farm(lab["inventory"], workdir=lab["workdir"], **options)  # type: ignore[arg-type]


def device_tree(lab: dict[str, Path], *strings: str) -> None:
    path = lab["board"] / "root" / "proc" / "device-tree" / "compatible"
    path.write_bytes(b"".join(s.encode() + b"\0" for s in strings))


def store(lab: dict[str, Path]) -> HealthStore:
    return HealthStore(health_folder(lab["workdir"], state_key(str(lab["inventory"]))))


def board_health(farm: Farm, board: str) -> HealthDocument:
    """The board's stored health and history."""
    return farm.health_store.read(board).to_dict()


# --- kept across runs ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_board_whose_breaker_opened_is_refused_by_the_next_run_at_once(
    lab: dict[str, Path],
) -> None:
    device_tree(lab, "radxa,rock-5b", "rockchip,rk3588")
    with farm(lab, breaker_threshold=1, health_job=golden_job) as first:
        first.ready("bare-01")
        assert board_health(first, "bare-01")["state"] == GOOD
        with pytest.raises(BoardBrokenError):
            run_model(first.session("bare-01"), "identity", X, faults=KILLED)
        run_one = first.run_id
    kept = store(lab).read("bare-01")
    assert kept.state == BAD and "circuit breaker" in kept.cause and "SIGKILL" in kept.cause
    assert [e.run_id for e in kept.history] == [run_one, run_one]
    # The next run: a new farm, nothing shared but the folder. Refused at once, with the cause
    # and since when, no agent started.
    with farm(lab) as second:
        clock = time.monotonic()
        with pytest.raises(BoardUnhealthyError, match=REFUSAL) as refused:
            second.ready("bare-01")
        assert time.monotonic() - clock < 0.5
        assert "circuit breaker" in refused.value.message
        assert "bare-01" not in second._sessions  # nothing was touched
        # ... and every later use this run says the same, as fast.
        with pytest.raises(BoardUnhealthyError, match=REFUSAL):
            second.ready("bare-01")
        assert board_health(second, "bare-01")["state"] == BAD
    # Cleared by hand: the next health check decides, and it passes.
    with farm(lab) as third:
        third.clear_health("bare-01")
        third.ready("bare-01")
        history = [e["what"] for e in board_health(third, "bare-01")["history"]]
        assert history[-2:] == ["cleared by hand", "health check passed"]
        assert board_health(third, "bare-01")["state"] == GOOD


@pytest.mark.slow
def test_a_power_cycle_and_a_passing_check_clear_a_bad_board(lab: dict[str, Path]) -> None:
    device_tree(lab, "rockchip,rk3588")
    store(lab).record("powered-01", BAD, "circuit breaker opened", cause="ping timed out")
    with farm(lab, health_job=golden_job) as run:
        session = run.ready("powered-01")  # power-cycled, checked, cleared
        assert lab["cycles"].exists()  # the inventory's power command ran
        (event,) = run.condition("powered-01").events
        assert "ping timed out" in event and event.endswith("cleared")
        assert run_model(session, "identity", X).ok
    kept = store(lab).read("powered-01")
    assert kept.state == GOOD
    assert [e.what for e in kept.history][-2:] == [POWER_CYCLED, CLEARED]
    assert "golden job passed" in kept.cause and "a simulated rk3588" in kept.cause


@pytest.mark.slow
def test_a_failing_check_after_the_power_cycle_keeps_it_bad(lab: dict[str, Path]) -> None:
    store(lab).record("powered-01", BAD, "circuit breaker opened", cause="ping timed out")
    (lab["board"] / "dead").touch()
    with farm(lab) as run:
        with pytest.raises(BoardUnhealthyError, match=REFUSAL) as refused:
            run.ready("powered-01")
        assert "after a power cycle" in refused.value.message
        assert "board does not boot" in refused.value.message
        assert lab["cycles"].exists()
        same_run = run.run_id
    kept = store(lab).read("powered-01")
    assert kept.state == BAD and kept.last is not None and kept.last.what == RECOVERY_FAILED
    assert "board does not boot" in kept.cause
    # Another process of the same run (a pytest-xdist worker) does not cycle it again.
    lab["cycles"].unlink()
    with farm(lab, run_id=same_run) as worker:
        clock = time.monotonic()
        with pytest.raises(BoardUnhealthyError, match=REFUSAL):
            worker.ready("powered-01")
        assert time.monotonic() - clock < 0.5 and not lab["cycles"].exists()
    # The board mended: the next run's power cycle and check clear it.
    (lab["board"] / "dead").unlink()
    with farm(lab) as mended:
        mended.ready("powered-01")
    assert store(lab).read("powered-01").state == GOOD


@pytest.mark.slow
def test_an_infrastructure_error_brings_the_health_check_back(lab: dict[str, Path]) -> None:
    with farm(lab, breaker_threshold=5, health_job=golden_job) as run:
        session = run.ready("bare-01")
        jobs = session.client.ping()["jobs"]
        run.ready("bare-01")  # checked once: no new golden job
        assert session.client.ping()["jobs"] == jobs
        with pytest.raises(AgentKilledError):
            run_model(session, "identity", X, faults=KILLED)
        run.ready("bare-01")  # the golden job again, on a fresh agent
        assert session.client.ping()["jobs"] == 1


@pytest.mark.slow
def test_a_board_the_farm_simulates_keeps_no_state(lab: dict[str, Path]) -> None:
    with farm(lab, breaker_threshold=1) as run:
        health = run.health("sim-01")
        assert health.ok and health.identity["state"] == "match"  # its simulated target
        with pytest.raises(BoardBrokenError):
            run_model(run.session("sim-01"), "identity", X, faults=KILLED)
    assert not store(lab).path("sim-01").exists()


def _hammer(folder: str, worker: int) -> None:
    kept = HealthStore(Path(folder))
    for n in range(20):
        kept.record("rk3588-01", (GOOD, BAD)[n % 2], "check", cause=f"{worker}-{n}", run_id="r")


@pytest.mark.slow
def test_concurrent_writers_keep_the_file_valid(tmp_path: Path) -> None:
    folder = tmp_path / "locks"
    with ProcessPoolExecutor(4) as pool:
        list(pool.map(_hammer, [str(folder)] * 4, range(4)))
    data = json.loads((folder / "rk3588-01.health.json").read_text())
    assert len(data["history"]) == MAX_HISTORY  # 80 events, the latest kept
    assert data["state"] in (GOOD, BAD) and data["history"][-1]["state"] == data["state"]
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_an_unreadable_health_file_is_unknown_and_rewritten(tmp_path: Path) -> None:
    kept = HealthStore(tmp_path / "locks")
    kept.record("b-01", BAD, "check", cause="x")
    kept.path("b-01").write_text("{not json")
    found = kept.read("b-01")
    assert found.state == UNKNOWN and found.problem and "expected JSON" in found.problem
    assert kept.record("b-01", GOOD, "check").state == GOOD


# --- identity -----------------------------------------------------------------------------------


def test_the_agent_reads_the_device_tree_bounded(tmp_path: Path) -> None:
    tree = tmp_path / "proc" / "device-tree"
    tree.mkdir(parents=True)
    (tree / "compatible").write_bytes(b"rockchip,rk3588-evb1-v10\0rockchip,rk3588\0")
    (tree / "model").write_bytes(b"Rockchip RK3588 EVB1\0")
    found = read_identity(str(tmp_path))
    assert found["compatible"] == ["rockchip,rk3588-evb1-v10", "rockchip,rk3588"]
    assert found["model"] == "Rockchip RK3588 EVB1" and not found["absent"]
    (tree / "compatible").write_bytes(b"a,b\0" * 5000)  # 20 kB: only the first 4 KiB read
    assert len(read_identity(str(tmp_path))["compatible"]) == 32
    (tree / "compatible").unlink()
    missing = read_identity(str(tmp_path))
    assert missing["absent"] and missing["compatible"] == [] and missing["error"] is None


@pytest.mark.slow
def test_the_right_soc_passes_over_the_real_agent(lab: dict[str, Path]) -> None:
    device_tree(lab, "radxa,rock-5b", "rockchip,rk3588")
    with farm(lab) as run:
        session = run.session("bare-01")
        # The simulated runtime stands in for the vendor's; the identity comes from the
        # board's device tree as a hardware board's does.
        session.simulated = False
        ping = session.client.ping()
        assert ping["identity"]["compatible"] == ["radxa,rock-5b", "rockchip,rk3588"]
        health = run.health("bare-01")
        assert health.ok, health.error
        assert health.identity["state"] == "match"


@pytest.mark.slow
def test_a_wrong_soc_is_an_infrastructure_error_naming_both(lab: dict[str, Path]) -> None:
    device_tree(lab, "firefly,rk3568-roc-pc", "rockchip,rk3568")
    with farm(lab) as run:
        run.session("powered-01").simulated = False
        health = run.health("powered-01")
        assert not health.ok and not health.recoverable
        assert health.error is not None and health.error.startswith("BoardIdentityError: ")
        assert "the inventory says rk3588" in health.error
        assert '"rockchip,rk3568", the SoC of target rk3568' in health.error
        with pytest.raises(BoardUnhealthyError, match="not the SoC its inventory says"):
            run.check_health("powered-01")
        assert not lab["cycles"].exists()  # no power cycle mends a wrong SoC
    kept = store(lab).read("powered-01")
    assert kept.state == BAD and "rockchip,rk3568" in kept.cause


@pytest.mark.slow
def test_a_missing_device_tree_is_recorded_as_unknown(lab: dict[str, Path]) -> None:
    with farm(lab) as run:
        run.session("bare-01").simulated = False
        health = run.health("bare-01")
        assert health.ok and health.identity["state"] == "unknown"
        assert "absent" in health.identity["detail"]
        run.check_health("bare-01")
    kept = store(lab).read("bare-01")
    assert kept.state == GOOD and "absent" in kept.cause


def test_the_tables_verdicts() -> None:
    assert judge_identity("rk3588", ["xunlong,orangepi-5", "rockchip,rk3588s"]).state == "match"
    wrong = judge_identity("rk3566", ["rockchip,rk3568"])
    assert wrong.state == "mismatch" and wrong.other_target == "rk3568"
    # An unverified row never refuses: a board reporting it for another target is unknown.
    assert judge_identity("rdk-x5", ["hobot,x3"]).state == "unknown"
    assert judge_identity("rdk-x5", ["Horizon, x5"]).state == "match"
    assert judge_identity("rk3588", ["acme,unknown-soc"]).state == "unknown"
    # The KL730 is a USB device: the host's device tree says nothing about it.
    assert judge_identity("kl730", ["rockchip,rk3588"]).state == "unknown"


def test_a_simulated_board_reports_its_simulated_target() -> None:
    ok = board_identity("rdk-x5", simulated=True, ping={}, versions={"target": "rdk-x5"})
    assert ok.state == "match"
    bad = board_identity("rdk-x5", simulated=True, ping={}, versions={"target": "kl730"})
    assert bad.state == "mismatch" and "rdk-x5" in bad.detail and "kl730" in bad.detail


@pytest.mark.slow
def test_the_golden_job_passes_on_every_target(tmp_path: Path) -> None:
    from npu_hil.harness.farm.starter import builtin_inventory

    with Farm(builtin_inventory(), workdir=tmp_path / "farm", backend="sim") as run:
        notes = {b.target: golden_job(run.session(b)) for b in run.inventory.boards}
    assert all(n.startswith("golden job passed") for n in notes.values()), notes
    # Each runtime takes its own element type: float where it quantizes, 8-bit where not.
    assert "float32" in notes["rk3588"] and "uint8" in notes["rv1106"]
