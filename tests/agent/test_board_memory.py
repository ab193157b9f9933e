"""The agent's memory reading (read_memory of npu_hil/harness/board/boardstate.py) from a fake
/proc and /sys tree: exact figures, absent files named, unreadable ones recorded, reads bounded;
and the ``memory`` request answered by a real resident agent under Python 3.8 with the tree moved
in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.board.boardstate import MAX_BUFFERS, SYSFS_ROOT_ENV, read_memory
from npu_hil.harness.transport.local import LocalTransport
from tests.agent.jobs import PY38, py38_problem

STATUS = (
    "Name:\tpython3\nVmPeak:\t  200000 kB\nVmHWM:\t   95000 kB\nVmRSS:\t   91234 kB\n"
    "RssAnon:\t   60000 kB\nThreads:\t4\n"
)
MEMINFO = (
    "MemTotal:  8000000 kB\nMemAvailable: 6000000 kB\nCmaTotal:  524288 kB\nCmaFree:   500000 kB\n"
)


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def board_tree(root: Path) -> Path:
    write(root, "proc/self/status", STATUS)
    write(root, "proc/meminfo", MEMINFO)
    write(root, "sys/kernel/mm/cma/reserved/alloc_pages_success", "1200\n")
    write(root, "sys/kernel/mm/cma/reserved/alloc_pages_fail", "3\n")
    for inode, size in (("1001", 4096), ("1002", 1 << 20)):
        write(root, f"sys/kernel/dmabuf/buffers/{inode}/size", f"{size}\n")
    return root


def test_a_full_tree_reads_exactly(tmp_path: Path) -> None:
    memory = read_memory(str(board_tree(tmp_path)))
    assert memory["pid"] == os.getpid()
    assert memory["process"] == {"VmRSS": 91234, "VmHWM": 95000, "RssAnon": 60000}
    assert memory["meminfo"] == {"CmaTotal": 524288, "CmaFree": 500000, "MemAvailable": 6000000}
    assert memory["cma"] == [
        {
            "area": "reserved",
            "alloc_pages_success": 1200,
            "alloc_pages_fail": 3,
            "release_pages_success": None,
        }
    ]
    assert memory["dmabuf"] == {
        "source": "/sys/kernel/dmabuf/buffers",
        "buffers": 2,
        "bytes": 4096 + (1 << 20),
        "truncated": False,
    }
    assert memory["absent"] == ["/sys/kernel/mm/cma/reserved/release_pages_success"]
    assert memory["unreadable"] == []


def test_an_empty_tree_names_what_is_absent_and_reads_our_own_rss(tmp_path: Path) -> None:
    memory = read_memory(str(tmp_path))
    # no status file in the fake tree: the agent's real one (what a soak measures)
    assert isinstance(memory["process"]["VmRSS"], int) and memory["process"]["VmRSS"] > 1000
    assert memory["meminfo"] == {"CmaTotal": None, "CmaFree": None, "MemAvailable": None}
    assert memory["cma"] == [] and memory["dmabuf"] is None
    assert memory["absent"] == [
        "/proc/meminfo",
        "/sys/kernel/mm/cma",
        "/sys/kernel/dmabuf/buffers",
        "/sys/kernel/debug/dma_buf/bufinfo",
    ]


def test_debugfs_bufinfo_is_the_fallback_and_garbage_is_recorded(tmp_path: Path) -> None:
    write(tmp_path, "proc/meminfo", "MemTotal: 1 kB\n")  # a kernel without CMA
    write(
        tmp_path,
        "sys/kernel/debug/dma_buf/bufinfo",
        "Dma-buf Objects:\nsize flags mode count exp_name\n00004096 ...\n\n"
        "Total 7 objects, 123456 bytes\n",
    )
    write(tmp_path, "sys/kernel/mm/cma/linux,cma/alloc_pages_success", "many\n")
    memory = read_memory(str(tmp_path))
    assert memory["dmabuf"] == {
        "source": "/sys/kernel/debug/dma_buf/bufinfo",
        "buffers": 7,
        "bytes": 123456,
    }
    assert "/proc/meminfo:CmaTotal" in memory["absent"]
    assert memory["unreadable"] == [
        {
            "path": "/sys/kernel/mm/cma/linux,cma/alloc_pages_success",
            "error": "not a count: 'many\\n'",
        }
    ]


def test_a_file_that_cannot_be_read_is_unreadable_not_absent(tmp_path: Path) -> None:
    (tmp_path / "sys/kernel/debug/dma_buf/bufinfo").mkdir(parents=True)  # EISDIR, as EACCES
    memory = read_memory(str(tmp_path))
    (entry,) = memory["unreadable"]
    assert entry["path"] == "/sys/kernel/debug/dma_buf/bufinfo"
    assert "/sys/kernel/debug/dma_buf/bufinfo" not in memory["absent"]


@pytest.mark.slow
def test_dma_buffers_are_counted_up_to_a_bound(tmp_path: Path) -> None:
    folder = tmp_path / "sys/kernel/dmabuf/buffers"
    for n in range(MAX_BUFFERS + 5):
        (folder / str(n)).mkdir(parents=True)
        (folder / str(n) / "size").write_text("10\n")
    dmabuf = read_memory(str(tmp_path))["dmabuf"]
    assert dmabuf["buffers"] == MAX_BUFFERS and dmabuf["truncated"] is True


def test_the_memory_request_under_38(tmp_path: Path) -> None:
    problem = py38_problem()
    if problem is not None:
        pytest.skip(problem)
    root = board_tree(tmp_path / "root")
    (root / "proc/self/status").unlink()  # the agent's own RSS, from its own /proc
    transport = LocalTransport(tmp_path / "board", python=PY38, env={SYSFS_ROOT_ENV: str(root)})
    with AgentClient(transport, margin_s=5) as client:
        memory = client.memory()
        pid = client.ping()["pid"]
        assert client.hello["python"].startswith("3.8.")
    assert memory["pid"] == pid != os.getpid()
    assert memory["process"]["VmRSS"] > 1000
    assert memory["meminfo"]["CmaFree"] == 500000
    assert memory["dmabuf"]["bytes"] == 4096 + (1 << 20)
