"""The board's state as the agent reads it (npu_hil/harness/board/boardstate.py), from a fake sysfs
and procfs tree: exact values, absent files named, garbage recorded instead of guessed."""

from __future__ import annotations

from pathlib import Path

from npu_hil.harness.board import boardstate
from npu_hil.harness.board.boardstate import MAX_ENTRIES, MAX_FILE_BYTES, read_board_state


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def rk3588_like(root: Path) -> Path:
    cpufreq = "sys/devices/system/cpu/cpufreq"
    write(root, f"{cpufreq}/policy0/scaling_governor", "schedutil\n")
    write(root, f"{cpufreq}/policy0/scaling_cur_freq", "1800000\n")
    write(root, f"{cpufreq}/policy4/scaling_governor", "performance\n")
    write(root, f"{cpufreq}/policy4/scaling_cur_freq", "2256000\n")
    write(root, "sys/class/devfreq/fdab0000.npu/governor", "rknpu_ondemand\n")
    write(root, "sys/class/devfreq/fdab0000.npu/cur_freq", "1000000000\n")
    write(root, "sys/class/devfreq/dmc/governor", "dmc_ondemand\n")
    write(root, "sys/class/devfreq/dmc/cur_freq", "2112000000\n")
    write(root, "sys/class/devfreq/fb000000.gpu/governor", "simple_ondemand\n")
    write(root, "sys/class/devfreq/fb000000.gpu/cur_freq", "300000000\n")
    write(root, "sys/class/thermal/thermal_zone0/type", "soc-thermal\n")
    write(root, "sys/class/thermal/thermal_zone0/temp", "46250\n")
    write(root, "sys/class/thermal/thermal_zone6/type", "npu-thermal\n")
    write(root, "sys/class/thermal/thermal_zone6/temp", "44400\n")
    write(root, "proc/loadavg", "0.52 0.31 0.12 1/123 4567\n")
    return root


def test_a_full_tree_reads_exactly(tmp_path: Path) -> None:
    state = read_board_state(str(rk3588_like(tmp_path)))
    assert state["cpu"] == [
        {"policy": "policy0", "governor": "schedutil", "cur_freq_khz": 1800000},
        {"policy": "policy4", "governor": "performance", "cur_freq_khz": 2256000},
    ]
    assert state["npu"] == [
        {"device": "fdab0000.npu", "governor": "rknpu_ondemand", "cur_freq_hz": 1000000000}
    ]
    assert state["ddr"] == [
        {"device": "dmc", "governor": "dmc_ondemand", "cur_freq_hz": 2112000000}
    ]
    assert state["thermal"] == [
        {"zone": "thermal_zone0", "type": "soc-thermal", "temp_mc": 46250},
        {"zone": "thermal_zone6", "type": "npu-thermal", "temp_mc": 44400},
    ]
    assert state["loadavg"] == [0.52, 0.31, 0.12]
    assert state["absent"] == [] and state["unreadable"] == []


def test_an_empty_tree_is_absent_everywhere_never_guessed(tmp_path: Path) -> None:
    state = read_board_state(str(tmp_path))
    assert state["cpu"] == state["npu"] == state["ddr"] == state["thermal"] == []
    assert state["loadavg"] is None
    assert state["absent"] == [
        "/sys/devices/system/cpu/cpufreq/policy*",
        "/sys/class/devfreq/*npu*",
        "/sys/class/devfreq/*dmc*",
        "/sys/class/thermal/thermal_zone*",
        "/proc/loadavg",
    ]


def test_a_missing_file_is_null_with_its_path(tmp_path: Path) -> None:
    write(tmp_path, "sys/devices/system/cpu/cpufreq/policy0/scaling_governor", "ondemand")
    write(tmp_path, "sys/class/devfreq/27f00000.npu/governor", "userspace")
    state = read_board_state(str(tmp_path))
    assert state["cpu"] == [{"policy": "policy0", "governor": "ondemand", "cur_freq_khz": None}]
    assert state["npu"] == [
        {"device": "27f00000.npu", "governor": "userspace", "cur_freq_hz": None}
    ]
    assert "/sys/devices/system/cpu/cpufreq/policy0/scaling_cur_freq" in state["absent"]
    assert "/sys/class/devfreq/27f00000.npu/cur_freq" in state["absent"]


def test_garbage_is_recorded_not_a_crash(tmp_path: Path) -> None:
    write(tmp_path, "sys/devices/system/cpu/cpufreq/policy0/scaling_cur_freq", "fast\n")
    write(tmp_path, "sys/class/thermal/thermal_zone0/temp", "\xff\x00 hot")
    write(tmp_path, "proc/loadavg", "high load\n")
    # a directory where a file should be: an OSError that is not "absent"
    (tmp_path / "sys/class/thermal/thermal_zone0/type").mkdir(parents=True)
    state = read_board_state(str(tmp_path))
    assert state["cpu"][0]["cur_freq_khz"] is None
    assert state["thermal"] == [{"zone": "thermal_zone0", "type": None, "temp_mc": None}]
    assert state["loadavg"] is None
    found = {u["path"]: u["error"] for u in state["unreadable"]}
    assert found["/sys/devices/system/cpu/cpufreq/policy0/scaling_cur_freq"] == (
        "not an integer: 'fast'"
    )
    assert "not an integer" in found["/sys/class/thermal/thermal_zone0/temp"]
    assert "not loads" in found["/proc/loadavg"]
    assert "/sys/class/thermal/thermal_zone0/type" in found


def test_reads_are_bounded(tmp_path: Path) -> None:
    write(tmp_path, "sys/class/thermal/thermal_zone0/type", "x" * (MAX_FILE_BYTES * 10))
    for i in range(MAX_ENTRIES + 20):
        write(tmp_path, f"sys/devices/system/cpu/cpufreq/policy{i:03d}/scaling_governor", "g")
    state = read_board_state(str(tmp_path))
    assert len(state["thermal"][0]["type"]) == MAX_FILE_BYTES
    assert len(state["cpu"]) == MAX_ENTRIES


def test_the_root_comes_from_the_environment(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(boardstate.SYSFS_ROOT_ENV, str(rk3588_like(tmp_path)))
    assert read_board_state()["loadavg"] == [0.52, 0.31, 0.12]
