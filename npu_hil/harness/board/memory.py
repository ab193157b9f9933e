"""The agent's own memory and the board's device-memory pools, for a soak's leak check (what is
read, from where: ``docs/runtime/agent.md``, The result document). Standard library only,
Python >= 3.8.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, cast

from .boardstate import MAX_ENTRIES, SysfsReader

if TYPE_CHECKING:
    from .documents import CmaJson, DmabufJson, MemoryJson

MAX_FILE_BYTES = 16384
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
    text = reads.text(rel, MAX_FILE_BYTES, strip=False)
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
