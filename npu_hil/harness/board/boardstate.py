"""The board's state beside a latency figure (clocks, governors, temperatures and load), what
SoC it says it is, and the agent's own memory and the board's device-memory pools for a soak's
leak check, read from the usual sysfs and procfs places, bounded, absent and unreadable ones
recorded (``docs/runtime/agent.md``, The result document). Standard library only, Python >= 3.8.
"""

from __future__ import annotations

import glob
import os
import re
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from .documents import (
        BoardStateJson,
        CmaJson,
        CpuPolicyJson,
        DevfreqJson,
        DmabufJson,
        GovernorJson,
        IdentityJson,
        MemoryJson,
        ThermalJson,
        UnreadableJson,
    )

SYSFS_ROOT_ENV = "NPU_HIL_SYSFS_ROOT"
MAX_FILE_BYTES = 4096
MAX_ENTRIES = 64
CPUFREQ = "sys/devices/system/cpu/cpufreq"
DEVFREQ = "sys/class/devfreq"
THERMAL = "sys/class/thermal"
LOADAVG = "proc/loadavg"
# Devfreq devices are named by their driver or device-tree node ("fdab0000.npu", "dmc",
# "ff9a0000.gpu"): matched by name, the name recorded.
NPU_NAME = re.compile(r"npu|bpu", re.IGNORECASE)
DDR_NAME = re.compile(r"dmc|ddr", re.IGNORECASE)


def sysfs_root() -> str:
    return os.environ.get(SYSFS_ROOT_ENV) or "/"


class SysfsReader:
    """Reads files under one root (a path relative to it, or one already joined), noting what was
    absent and what could not be read."""

    def __init__(self, root: str | None = None) -> None:
        self.root = root if root is not None else sysfs_root()
        self.absent: list[str] = []
        self.unreadable: list[UnreadableJson] = []

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    def shown(self, full: str) -> str:
        # The path as it is on a board: the injected root is not part of it.
        return "/" + os.path.relpath(full, self.root)

    def text(self, path: str, limit: int = MAX_FILE_BYTES, strip: bool = True) -> str | None:
        full = self.path(path)
        try:
            with open(full, "rb") as handle:
                raw = handle.read(limit)
        except FileNotFoundError:
            self.absent.append(self.shown(full))
            return None
        except OSError as exc:  # debugfs without root: EACCES
            self.unreadable.append({"path": self.shown(full), "error": str(exc)})
            return None
        text = raw.decode("utf-8", "replace")
        return text.strip() if strip else text

    def integer(self, full: str) -> int | None:
        text = self.text(full)
        if text is None:
            return None
        try:
            return int(text)
        except ValueError:
            self.unreadable.append({"path": self.shown(full), "error": f"not an integer: {text!r}"})
            return None

    def listing(self, pattern: str, note_absent: bool = True) -> list[str]:
        found = sorted(glob.glob(self.path(pattern)))
        if not found and note_absent:
            self.absent.append("/" + pattern)
        return found[:MAX_ENTRIES]


def _devfreq(reader: SysfsReader, devices: list[str], name: re.Pattern[str]) -> list[DevfreqJson]:
    return [
        {
            "device": os.path.basename(full),
            "governor": reader.text(os.path.join(full, "governor")),
            "cur_freq_hz": reader.integer(os.path.join(full, "cur_freq")),
        }
        for full in devices
        if name.search(os.path.basename(full))
    ]


def _loadavg(reader: SysfsReader) -> list[float] | None:
    full = reader.path(LOADAVG)
    text = reader.text(full)
    if text is None:
        return None
    try:
        return [float(v) for v in text.split()[:3]]
    except ValueError:
        reader.unreadable.append({"path": reader.shown(full), "error": f"not loads: {text!r}"})
        return None


def read_board_state(root: str | None = None) -> BoardStateJson:
    """One reading: ``cpu`` (per cpufreq policy: governor, cur_freq_khz), ``npu`` and ``ddr``
    (devfreq devices matched by name: governor, cur_freq_hz), ``thermal`` (per zone: type,
    temp_mc in millidegrees C), ``loadavg`` (1, 5, 15 min), and ``absent`` / ``unreadable``:
    the paths tried that were missing, or held what is not a number."""
    reader = SysfsReader(root)
    cpu: list[CpuPolicyJson] = [
        {
            "policy": os.path.basename(full),
            "governor": reader.text(os.path.join(full, "scaling_governor")),
            "cur_freq_khz": reader.integer(os.path.join(full, "scaling_cur_freq")),
        }
        for full in reader.listing(CPUFREQ + "/policy*")
    ]
    devices = reader.listing(DEVFREQ + "/*", note_absent=False)
    npu = _devfreq(reader, devices, NPU_NAME)
    ddr = _devfreq(reader, devices, DDR_NAME)
    if not npu:
        reader.absent.append(f"/{DEVFREQ}/*npu*")
    if not ddr:
        reader.absent.append(f"/{DEVFREQ}/*dmc*")
    thermal: list[ThermalJson] = [
        {
            "zone": os.path.basename(full),
            "type": reader.text(os.path.join(full, "type")),
            "temp_mc": reader.integer(os.path.join(full, "temp")),
        }
        for full in reader.listing(THERMAL + "/thermal_zone*")
    ]
    return {
        "cpu": cpu,
        "npu": npu,
        "ddr": ddr,
        "thermal": thermal,
        "loadavg": _loadavg(reader),
        "absent": reader.absent,
        "unreadable": reader.unreadable,
    }


PERFORMANCE = "performance"


def _write(full: str, value: str) -> str | None:
    """Write ``value`` into a sysfs file; the error as text, or None."""
    try:
        # Without O_CREAT: a governor file that is not there is not made up. O_TRUNC as a
        # shell's ``echo >`` opens it (sysfs ignores it; a plain file in a test tree needs it).
        fd = os.open(full, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)
    except OSError as exc:
        return str(exc)
    return None


def pin_clocks() -> list[GovernorJson]:
    """Set every cpufreq policy's and the NPU's and DDR's devfreq governor to ``performance``
    for a perf run. Returns one entry per governor file: its path as on the board, the governor
    it had (``was``) and ``error`` when it could not be set (not root, a governor the kernel
    lacks); :func:`restore_clocks` puts back what was there."""
    reader = SysfsReader()
    files = [os.path.join(p, "scaling_governor") for p in reader.listing(CPUFREQ + "/policy*")]
    for full in reader.listing(DEVFREQ + "/*", note_absent=False):
        name = os.path.basename(full)
        if NPU_NAME.search(name) or DDR_NAME.search(name):
            files.append(os.path.join(full, "governor"))
    pinned: list[GovernorJson] = []
    for full in files:
        was = reader.text(full)
        entry: GovernorJson = {"path": reader.shown(full), "was": was, "set": PERFORMANCE}
        if was is None:
            entry["error"] = "unreadable"
        elif was != PERFORMANCE:
            error = _write(full, PERFORMANCE)
            if error is not None:
                entry["error"] = error
        pinned.append(entry)
    return pinned


def restore_clocks(pinned: list[GovernorJson]) -> list[GovernorJson]:
    """Put back the governors :func:`pin_clocks` changed; the ones that could not be restored,
    with why (empty when all were)."""
    base = sysfs_root()
    failed: list[GovernorJson] = []
    for entry in pinned:
        if entry.get("error") or entry.get("was") in (None, PERFORMANCE):
            continue
        full = os.path.join(base, entry["path"].lstrip("/"))
        error = _write(full, str(entry["was"]))
        if error is not None:
            failed.append({"path": entry["path"], "was": entry["was"], "error": error})
    return failed


# What SoC the board says it is: the device tree's root compatible strings and model.
COMPATIBLE = "proc/device-tree/compatible"
MODEL = "proc/device-tree/model"
MAX_STRINGS = 32
MAX_STRING_CHARS = 128


def _strings(raw: str) -> list[str]:
    parts = [p[:MAX_STRING_CHARS] for p in raw.split("\0")]
    return [p.strip() for p in parts if p.strip()][:MAX_STRINGS]


def read_identity(root: str | None = None) -> IdentityJson:
    """``source`` (the path as on the board), ``compatible`` (the strings, board first, SoC
    last; empty when absent), ``model`` (or None), ``absent`` (no such file) and ``error`` (why
    it could not be read, or None)."""
    reader = SysfsReader(root)
    raw = reader.text(COMPATIBLE)
    errors = [u["error"] for u in reader.unreadable]
    models = _strings(reader.text(MODEL) or "")
    return {
        "source": "/" + COMPATIBLE,
        "compatible": _strings(raw) if raw is not None else [],
        "model": models[0] if models else None,
        "absent": raw is None and not errors,
        "error": errors[0] if errors else None,
    }


# The agent's own memory and the board's device-memory pools (a soak's leak check).
MAX_MEMORY_FILE_BYTES = 16384
MAX_BUFFERS = 4096
STATUS = "proc/self/status"
MEMINFO = "proc/meminfo"
CMA_AREAS = "sys/kernel/mm/cma"
DMABUF_SYSFS = "sys/kernel/dmabuf/buffers"
DMABUF_DEBUG = "sys/kernel/debug/dma_buf/bufinfo"
STATUS_KEYS = ("VmRSS", "VmHWM", "RssAnon")
MEMINFO_KEYS = ("CmaTotal", "CmaFree", "MemAvailable")
CMA_COUNTERS = ("alloc_pages_success", "alloc_pages_fail", "release_pages_success")
_KIB_LINE = re.compile(r"^(\w+):\s+(\d+)\s*kB", re.MULTILINE)
# bufinfo ends with "Total <n> objects, <bytes> bytes"
_BUFINFO_TOTAL = re.compile(r"Total\s+(\d+)\s+objects,\s+(\d+)\s+bytes")


def _kib_fields(reads: SysfsReader, rel: str, keys: tuple[str, ...]) -> dict[str, int | None]:
    text = reads.text(rel, MAX_MEMORY_FILE_BYTES, strip=False)
    found = dict(_KIB_LINE.findall(text or ""))
    values: dict[str, int | None] = {key: None for key in keys}
    for key in keys:
        if key in found:
            values[key] = int(found[key])
        elif text is not None:
            reads.absent.append(f"/{rel}:{key}")
    return values


def _status_path(root: str) -> str:
    """The agent's own status file: under a fake root only when the tree has one."""
    if root != "/" and os.path.exists(os.path.join(root, STATUS)):
        return root
    return "/"


def _cma_areas(reads: SysfsReader) -> list[CmaJson]:
    folder = os.path.join(reads.root, CMA_AREAS)
    try:
        names = sorted(os.listdir(folder))[:MAX_ENTRIES]
    except OSError:
        reads.absent.append("/" + CMA_AREAS)
        return []
    areas = []
    for name in names:
        counts: dict[str, int | None] = {}
        for counter in CMA_COUNTERS:
            text = reads.text(f"{CMA_AREAS}/{name}/{counter}", 64, strip=False)
            try:
                counts[counter] = int(text) if text is not None else None
            except ValueError:
                reads.unreadable.append(
                    {"path": f"/{CMA_AREAS}/{name}/{counter}", "error": f"not a count: {text!r}"}
                )
                counts[counter] = None
        areas.append(cast("CmaJson", {"area": name, **counts}))
    return areas


def _dmabuf(reads: SysfsReader) -> DmabufJson | None:
    folder = os.path.join(reads.root, DMABUF_SYSFS)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        reads.absent.append("/" + DMABUF_SYSFS)
        names = None
    if names is not None:
        total, counted = 0, 0
        for name in names[:MAX_BUFFERS]:
            text = reads.text(f"{DMABUF_SYSFS}/{name}/size", 64, strip=False)
            if text is not None and text.strip().isdigit():
                total += int(text)
                counted += 1
        return {
            "source": "/" + DMABUF_SYSFS,
            "buffers": counted,
            "bytes": total,
            "truncated": len(names) > MAX_BUFFERS,
        }
    # debugfs: the whole file can be long; its total line is the last one
    text = reads.text(DMABUF_DEBUG, 1 << 20, strip=False)
    match = _BUFINFO_TOTAL.search(text or "")
    if match is None:
        if text is not None:
            reads.unreadable.append({"path": "/" + DMABUF_DEBUG, "error": "no Total line"})
        return None
    return {"source": "/" + DMABUF_DEBUG, "buffers": int(match[1]), "bytes": int(match[2])}


def read_memory(root: str | None = None) -> MemoryJson:
    """One reading: ``pid``; ``process`` (VmRSS, VmHWM, RssAnon in KiB, None where absent);
    ``meminfo`` (CmaTotal, CmaFree, MemAvailable in KiB); ``cma`` (per CMA area: its page
    counters); ``dmabuf`` (buffers, bytes, source; None where neither source is readable);
    ``absent`` / ``unreadable``: the paths tried that were missing or could not be read."""
    reads = SysfsReader(root)
    own = SysfsReader(_status_path(reads.root))
    process = _kib_fields(own, STATUS, STATUS_KEYS)
    meminfo = _kib_fields(reads, MEMINFO, MEMINFO_KEYS)
    return {
        "pid": os.getpid(),
        "process": process,
        "meminfo": meminfo,
        "cma": _cma_areas(reads),
        "dmabuf": _dmabuf(reads),
        "absent": own.absent + reads.absent,
        "unreadable": own.unreadable + reads.unreadable,
    }
