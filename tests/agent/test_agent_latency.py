"""The agent times the runtime call itself: warm-up runs, then N timed runs, every duration and
the board's state before and after them in the result; the job document's runs and warmup
bounded, and a result whose durations or board state do not add up refused on the host."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.board import wire as board
from npu_hil.harness.board.boardstate import SYSFS_ROOT_ENV
from npu_hil.harness.board.job import MAX_RUNS, MAX_WARMUP
from npu_hil.harness.errors import ProtocolError
from tests.agent.jobs import PY38, OneShot, X, echo_job, py38_problem, run_once
from tests.agent.test_board_state import rk3588_like


def run_agent(
    tmp_path: Path,
    sysfs: Path | None = None,
    python: str = sys.executable,
    change: dict[str, Any] | None = None,
    **overrides: Any,
) -> tuple[OneShot, Path, dict[str, Any]]:
    """An echo job (``overrides`` to its spec) run by a one-shot agent reading the board's
    sysfs under ``sysfs``, its document changed by ``change`` before it is sent: how it ended,
    the adapter's journal, and the document as sent."""
    model = tmp_path / "model.bin"
    model.write_bytes(b"model bytes")
    journal = tmp_path / "journal.txt"
    spec = echo_job(model, adapter_options={"journal": str(journal)}, **overrides)
    sent: dict[str, Any] = {}

    def edit(document: dict[str, Any]) -> dict[str, Any]:
        document.update(change or {})
        sent.update(document)
        return document

    env = dict(os.environ)
    if sysfs is not None:
        env[SYSFS_ROOT_ENV] = str(sysfs)
    shot = run_once(
        tmp_path / "board", spec, {"x": X}, python=python, edit=edit, env=env, timeout=120
    )
    return shot, journal, sent


def run_lines(journal: Path) -> int:
    return sum(line.split()[1] == "run" for line in journal.read_text().splitlines())


@pytest.mark.slow
def test_warmup_then_timed_runs_each_call_the_runtime(tmp_path: Path) -> None:
    shot, journal, _ = run_agent(tmp_path, sysfs=rk3588_like(tmp_path / "sysfs"), runs=5, warmup=2)
    assert shot.returncode == 0 and shot.status == board.EXIT_OK, shot.stderr
    assert run_lines(journal) == 7  # 2 warm-up + 5 timed calls of adapter.run
    result = shot.result("job")
    assert result.ok
    assert len(result.timings.runs_s) == 5 and all(s > 0 for s in result.timings.runs_s)
    # the echo adapter's own figure for each timed run
    assert result.timings.adapter_runs_s == (0.0001,) * 5
    assert result.timings.warmup == 2
    # the buffers are the last run's: the 7th call of the adapter
    assert result.output("x_out").attributes["runs"] == 7
    assert np.array_equal(result.output("x_out").data.view(np.int8).reshape(X.shape), X)
    for phase in ("before", "after"):
        state = result.board_state[phase]
        assert state["npu"] == [
            {"device": "fdab0000.npu", "governor": "rknpu_ondemand", "cur_freq_hz": 1000000000}
        ]
        assert state["thermal"][0] == {
            "zone": "thermal_zone0",
            "type": "soc-thermal",
            "temp_mc": 46250,
        }


@pytest.mark.slow
def test_the_default_is_one_timed_run_as_before(tmp_path: Path) -> None:
    shot, journal, sent = run_agent(tmp_path, sysfs=tmp_path / "empty")
    assert sent["runs"] == 1 and sent["warmup"] == 0
    assert shot.returncode == 0 and shot.status == board.EXIT_OK, shot.stderr
    assert run_lines(journal) == 1
    result = shot.result("job")
    assert len(result.timings.runs_s) == 1 and result.timings.warmup == 0
    assert "/proc/loadavg" in result.board_state["before"]["absent"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("runs", 0),
        ("runs", -1),
        ("runs", MAX_RUNS + 1),
        ("runs", True),
        ("runs", 2.5),
        ("runs", "5"),
        ("warmup", -1),
        ("warmup", MAX_WARMUP + 1),
        ("warmup", False),
        ("warmup", [1]),
    ],
)
def test_bad_run_counts_are_refused(tmp_path: Path, key: str, value: object) -> None:
    shot, journal, sent = run_agent(tmp_path, change={key: value})
    assert sent[key] == value
    assert shot.returncode == 0 and shot.status == board.EXIT_REFUSED, shot.stderr
    (record,) = shot.errors
    assert record["type"] == "JobError" and record["field"] == key
    assert "expected an integer in" in record["message"] and repr(value) in record["message"]
    assert not journal.exists() or run_lines(journal) == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        (lambda t: t.update(runs_s=[0.1, -1.0]), "timings.runs_s"),
        (lambda t: t.update(runs_s="fast"), "timings.runs_s"),
        (lambda t: t.update(runs_s=[True]), "timings.runs_s"),
        (lambda t: t.update(runs_s=[0.0] * (MAX_RUNS + 1)), "timings.runs_s"),
        (lambda t: t.update(adapter_runs_s=[0.1, 0.2]), "2 durations for 1 runs"),
        (lambda t: t.update(warmup=-3), "timings.warmup"),
    ],
)
def test_a_result_with_bad_durations_is_a_protocol_error(
    tmp_path: Path, change: Any, phrase: str
) -> None:
    shot, _, _ = run_agent(tmp_path)
    assert shot.status == board.EXIT_OK, shot.stderr
    assert shot.result().ok  # as the agent answered, the result holds
    assert shot.response is not None
    change(shot.response["result"]["timings"])
    with pytest.raises(ProtocolError, match=phrase):
        shot.result()


@pytest.mark.slow
def test_a_result_with_a_bad_board_state_is_a_protocol_error(tmp_path: Path) -> None:
    shot, _, _ = run_agent(tmp_path)
    assert shot.status == board.EXIT_OK, shot.stderr
    assert shot.result().ok
    assert shot.response is not None
    shot.response["result"]["board_state"] = {"during": {}}
    with pytest.raises(ProtocolError, match="board_state"):
        shot.result()


PROBLEM = py38_problem()


@pytest.mark.skipif(PROBLEM is not None, reason=PROBLEM or "")
def test_timed_runs_and_board_state_under_python_38(tmp_path: Path) -> None:
    shot, journal, _ = run_agent(
        tmp_path, sysfs=rk3588_like(tmp_path / "sysfs"), python=PY38, runs=3, warmup=1
    )
    assert shot.returncode == 0 and shot.status == board.EXIT_OK, shot.stderr
    assert shot.frames[0]["python"].startswith("3.8.")
    assert run_lines(journal) == 4
    result = shot.result("job")
    assert len(result.timings.runs_s) == 3
    assert result.board_state["after"]["loadavg"] == [0.52, 0.31, 0.12]


@pytest.mark.slow
def test_pin_clocks_sets_performance_for_the_runs_and_restores(tmp_path: Path) -> None:
    sysfs = rk3588_like(tmp_path / "sysfs")
    # a governor file the agent cannot write (a directory): recorded, the rest still pinned
    broken = sysfs / "sys/devices/system/cpu/cpufreq/policy6/scaling_governor"
    broken.mkdir(parents=True)
    shot, _, _ = run_agent(tmp_path, sysfs=sysfs, runs=3, warmup=1, pin_clocks=True)
    assert shot.returncode == 0 and shot.status == board.EXIT_OK, shot.stderr
    result = shot.result("job")
    before = result.board_state["before"]
    # read after pinning: the timed runs ran at these governors
    assert [c["governor"] for c in before["cpu"][:2]] == ["performance", "performance"]
    assert before["npu"][0]["governor"] == "performance"
    assert before["ddr"][0]["governor"] == "performance"
    pinned = {g["path"]: g for g in result.board_state["pinned"]["governors"]}
    cpufreq = "/sys/devices/system/cpu/cpufreq"
    assert pinned[f"{cpufreq}/policy0/scaling_governor"]["was"] == "schedutil"
    assert pinned["/sys/class/devfreq/dmc/governor"]["was"] == "dmc_ondemand"
    assert "error" in pinned[f"{cpufreq}/policy6/scaling_governor"]
    assert "/sys/class/devfreq/fb000000.gpu/governor" not in pinned  # the GPU is left alone
    assert result.board_state["pinned"]["not_restored"] == []
    # and after the job the board is as it was
    read = (sysfs / cpufreq[1:] / "policy0/scaling_governor").read_text().strip()
    assert read == "schedutil"
    assert (sysfs / "sys/class/devfreq/fdab0000.npu/governor").read_text() == "rknpu_ondemand"
    assert (sysfs / "sys/class/devfreq/dmc/governor").read_text() == "dmc_ondemand"
    assert (sysfs / "sys/class/devfreq/fb000000.gpu/governor").read_text() == "simple_ondemand\n"
    assert (sysfs / cpufreq[1:] / "policy4/scaling_governor").read_text() == "performance\n"


@pytest.mark.slow
def test_pin_clocks_must_be_a_flag(tmp_path: Path) -> None:
    shot, _, _ = run_agent(tmp_path, change={"pin_clocks": "yes"})
    assert shot.status == board.EXIT_REFUSED, shot.stderr
    (record,) = shot.errors
    assert record["field"] == "pin_clocks" and "true or false" in record["message"]
