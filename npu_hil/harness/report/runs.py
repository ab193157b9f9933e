"""Run folders ``reports/<run-id>/`` (a UTC timestamp and a random suffix: sorted by name is sorted
by start) and the files a run leaves as it goes: ``records.jsonl`` a line per finished test,
``run.json`` its key and start (a run that dies early is still known as one of its kind). A run
folder is private (0700): failure messages and boot logs are for whoever ran the suite."""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from typing_extensions import TypedDict

from npu_hil.harness.errors import UnsafeFolderError
from npu_hil.harness.files import InputFileError, json_document, read_json, read_regular
from npu_hil.harness.folders import check_private_dir
from npu_hil.harness.report.atomic import append_line, write_text_atomic
from npu_hil.harness.report.records import RecordDocument, TestRecord, scrubbed_dict
from npu_hil.harness.report.runmeta import RunMeta
from npu_hil.harness.report.sanitize import clean_json, clean_value

RECORDS_FILE = "records.jsonl"
SUMMARY_FILE = "summary.json"
OUTCOMES_FILE = "outcomes.json"
"""Each case's board and outcome, the compact index later runs compare with."""
RUN_FILE = "run.json"
MEASUREMENTS_FILE = "measurements.json"
"""Each case's figures (latency, accuracy), the history's view of the run."""
FOLDER_MODE = 0o700
RUN_DIR_ENV = "NPU_HIL_RUN_DIR"
RUN_ID_PATTERN = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{6}$")


def root_problem(reports_root: str | Path) -> str | None:
    """Why the runs under ``reports_root`` are not to be believed, or None: the folder is
    another user's, or others may write it (OpenSSH's StrictModes; a folder above it too).
    Whoever can write there can plant earlier runs, and so decide the baselines, the history
    and the comparison. A root that does not exist yet holds no runs: None."""
    try:
        check_private_dir(reports_root)
    except FileNotFoundError:
        return None
    except UnsafeFolderError as exc:
        return f"reports folder not trusted: {exc.message}"
    except OSError as exc:
        return f"reports folder {reports_root}: {exc.strerror or exc}"
    return None


def new_run_id(now: datetime | None = None) -> str:
    stamp = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return f"{stamp:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def new_run_dir(reports_root: str | Path) -> Path:
    """Create and return ``<reports_root>/<run-id>/``."""
    root = Path(reports_root)
    root.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    while True:
        run_dir = root / new_run_id()
        try:
            run_dir.mkdir(mode=FOLDER_MODE)
        except FileExistsError:  # same second, same random suffix: draw again
            continue
        return run_dir


def run_dir_for_session(reports_root: str | Path, run_id: str | None = None) -> Path:
    """The run folder a pytest session writes to: ``NPU_HIL_RUN_DIR`` (``npu-hil nightly`` makes
    it first, to watch the records arrive), else ``<root>/<run_id>``, else a new folder."""
    named = os.environ.get(RUN_DIR_ENV)
    if named:
        path = Path(named)
        path.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        # The folders above may be anyone's: the run is written all the same, and
        # root_problem keeps earlier runs there from being believed.
        return check_private_dir(path, check_above=False)
    if run_id:
        Path(reports_root).mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        path = Path(reports_root) / run_id
        path.mkdir(mode=FOLDER_MODE, exist_ok=True)
        # A folder of that name made by someone else first is never written into.
        return check_private_dir(path, check_above=False)
    return new_run_dir(reports_root)


class RunStart(TypedDict, total=False):
    """run.json: the run's id, key and start, written with its first record (a run that dies
    before its summary.json is still known as a run of its kind)."""

    run_id: str
    run_key: str
    started: str


class PastSummary(TypedDict, total=False):
    """An earlier run's summary.json as its readers take it: any schema (2 embedded the records),
    every key possibly absent; ``meta`` and ``outcomes`` checked to be objects where read."""

    meta: RunMeta
    outcomes: dict[str, int]
    records: list[RecordDocument]
    total: int
    hardware: int
    simulated: int
    not_run: int
    run_failure: str | None
    per_board: dict[str, dict[str, Any]]
    board_health: dict[str, list[dict[str, Any]]]


def append_record(run_dir: str | Path, record: TestRecord) -> TestRecord:
    """Append ``record`` as one JSON line to ``<run_dir>/records.jsonl``, scrubbed; return the
    scrubbed record (what was written), for :func:`write_run` to take as clean."""
    data = scrubbed_dict(record)  # one walk: the line and the record both come from it
    line = json.dumps(data, sort_keys=True, separators=(",", ":"))
    append_line(Path(run_dir) / RECORDS_FILE, line)
    return TestRecord.from_dict(data)


MAX_RECORDS_BYTES = 1 << 30
"""records.jsonl read back: 12,000 cases write about 30 MB."""


def load_records(run_dir: str | Path) -> list[TestRecord]:
    """Every whole record in ``records.jsonl``; a torn last line from a crash is skipped, and so
    is a line that is not a record (too deep, not JSON, not an object of a record's fields).
    A records file that is not a regular file, or larger than MAX_RECORDS_BYTES, reads as none."""
    path = Path(run_dir) / RECORDS_FILE
    try:
        data = read_regular(path, "a run's records", MAX_RECORDS_BYTES, follow=False)
    except InputFileError:
        return []
    records = []
    for line in bytes(data).decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            records.append(TestRecord.from_dict(json_document(line, str(path))))
        except (InputFileError, TypeError, AttributeError):
            continue
    return records


def write_run_start(run_dir: str | Path, meta: RunStart) -> None:
    """``<run_dir>/run.json``: what is known of the run when it starts (its run key)."""
    text = json.dumps(clean_value(meta), indent=2, sort_keys=True)
    write_text_atomic(Path(run_dir) / RUN_FILE, text + "\n")


def past_document(
    path: Path, what: str, *objects: str, problems: list[str] | None = None
) -> dict[str, object] | None:
    """A JSON object an earlier run wrote, or None when absent or damaged: read bounded
    (:func:`npu_hil.harness.files.read_json`), so a FIFO or a nested bomb costs only that run.
    A file that cannot be read is named in ``problems``, if given; an absent one is not (a run
    still running has no file yet)."""
    try:
        data = read_json(path, what, follow=False)
    except InputFileError as exc:
        if problems is not None and os.path.lexists(path):
            problems.append(f"{exc.message}: left out of the history")
        return None
    if not isinstance(data, dict) or any(
        not isinstance(data.get(key, {}), dict) for key in objects
    ):
        return None
    return data


def read_run_start(run_dir: Path) -> RunStart | None:
    """A past run's run.json, or None (a ``run_key`` not a string is damage: None too)."""
    data = past_document(run_dir / RUN_FILE, "a run's start record")
    if data is None or not isinstance(data.get("run_key", ""), str):
        return None
    return cast(RunStart, data)


def read_summary(run_dir: Path) -> PastSummary | None:
    """A past run's summary.json, or None when it has none (still running, or crashed) or it
    cannot be read, or its ``meta`` or ``outcomes`` is not an object."""
    return cast(
        "PastSummary | None",
        past_document(run_dir / SUMMARY_FILE, "a run's summary", "meta", "outcomes"),
    )


def write_outcomes(run_dir: str | Path, records: Sequence[TestRecord]) -> None:
    """``<run_dir>/outcomes.json``: ``[nodeid, board, outcome]`` per case, what a later run's
    comparison needs of this one (a summary of 12,000 cases need not be parsed for it)."""
    rows = [[r.nodeid, r.board or "", r.outcome] for r in records]
    text = clean_json({"schema": 1, "cases": rows}, separators=(",", ":"))
    write_text_atomic(Path(run_dir) / OUTCOMES_FILE, text + "\n")


def read_outcomes(run_dir: Path) -> list[tuple[str, str, str]] | None:
    """A past run's ``[nodeid, board, outcome]`` rows, or None when it wrote none (a run of an
    older harness: its summary.json embeds the records instead)."""
    data = past_document(run_dir / OUTCOMES_FILE, "a run's outcomes")
    cases = data.get("cases") if data is not None else None
    if not isinstance(cases, list):
        return None
    return [
        (row[0], row[1], row[2])
        for row in cases
        if isinstance(row, list) and len(row) == 3 and all(isinstance(v, str) for v in row)
    ]
