"""The runtime matrix (``npu-hil nightly --runtime-matrix``, docs/farm/nightly.md): matrix.json
and matrix.html, a row per case and a column per runtime; rows that disagree come first, and a
case a runtime did not run is ``absent`` there, never a disagreement by itself."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from importlib.resources import files
from pathlib import Path

from typing_extensions import NotRequired, TypedDict

from npu_hil.harness.report.atomic import write_text_atomic
from npu_hil.harness.report.records import TestRecord
from npu_hil.harness.report.runs import PastSummary, load_records, read_summary

MATRIX_JSON = "matrix.json"
MATRIX_HTML = "matrix.html"
ABSENT = "absent"
MESSAGE_CHARS = 240


class MatrixCell(TypedDict):
    """One runtime's cell of a case in matrix.json: the outcome, the first line of its message,
    the versions the board reported and the p50 latency, where there are any."""

    outcome: str
    message: NotRequired[str]
    versions: NotRequired[dict[str, str]]
    p50_ms: NotRequired[float]


class MatrixColumn(TypedDict):
    """A runtime's column in matrix.json: its run and that run's outcome counts."""

    runtime: str
    run_id: str
    pytest_exit: int
    outcomes: dict[str, int]
    report: str


class MatrixRow(TypedDict):
    """A case (board and test id) in matrix.json, a cell per runtime."""

    board: str
    nodeid: str
    cells: dict[str, MatrixCell]
    agree: bool


class MatrixDocument(TypedDict):
    """matrix.json (:func:`build_matrix`)."""

    schema: int
    runtimes: list[MatrixColumn]
    cases: list[MatrixRow]
    disagreements: int


@dataclass(frozen=True)
class MatrixRun:
    """One runtime's run of the suite: its name, its run folder and pytest's exit status."""

    runtime: str
    run_dir: Path
    exit_code: int


def _cell(record: TestRecord) -> MatrixCell:
    cell: MatrixCell = {"outcome": record.outcome}
    if record.message:
        cell["message"] = record.message.splitlines()[0][:MESSAGE_CHARS]
    if record.runtime_versions:
        cell["versions"] = dict(record.runtime_versions)
    p50 = record.latency.get("p50_ms") if record.latency else None
    if p50 is not None:
        cell["p50_ms"] = p50
    return cell


def build_matrix(runs: Sequence[MatrixRun]) -> MatrixDocument:
    """The matrix of ``runs`` (one per runtime, in the order given) as plain data."""
    names = [run.runtime for run in runs]
    cases: dict[tuple[str, str], dict[str, MatrixCell]] = {}
    columns: list[MatrixColumn] = []
    for run in runs:
        summary: PastSummary = read_summary(run.run_dir) or {}
        columns.append(
            {
                "runtime": run.runtime,
                "run_id": run.run_dir.name,
                "pytest_exit": run.exit_code,
                "outcomes": summary.get("outcomes", {}),
                "report": f"../{run.run_dir.name}/report.html",
            }
        )
        for record in load_records(run.run_dir):
            if not record.board:
                continue  # a case no board served (none has the runtime): nothing to compare
            key = (record.board or "", record.nodeid)
            cases.setdefault(key, {})[run.runtime] = _cell(record)
    rows: list[MatrixRow] = []
    for (board, nodeid), cells in cases.items():
        outcomes = {cells[name]["outcome"] for name in names if name in cells}
        rows.append(
            {
                "board": board,
                "nodeid": nodeid,
                "cells": {name: cells.get(name, {"outcome": ABSENT}) for name in names},
                "agree": len(outcomes) <= 1,
            }
        )
    rows.sort(key=lambda row: (row["agree"], row["board"], row["nodeid"]))
    return {
        "schema": 1,
        "runtimes": columns,
        "cases": rows,
        "disagreements": sum(1 for row in rows if not row["agree"]),
    }


def write_matrix(folder: Path, matrix: MatrixDocument) -> None:
    """``matrix.json`` and ``matrix.html`` in ``folder`` (created by the caller, ours alone)."""
    write_text_atomic(folder / MATRIX_JSON, json.dumps(matrix, indent=1, sort_keys=True) + "\n")
    write_text_atomic(folder / MATRIX_HTML, matrix_html(matrix))


CSS = (files("npu_hil.harness.report") / "matrix.css").read_text(encoding="utf-8")


def _html_cell(cell: MatrixCell) -> str:
    outcome = cell["outcome"]
    parts = [f"<b>{escape(outcome)}</b>"]
    if "p50_ms" in cell:
        parts.append(f"<span class=small>p50 {float(cell['p50_ms']):.4g} ms</span>")
    if "versions" in cell:
        shown = ", ".join(f"{k} {v}" for k, v in sorted(cell["versions"].items()))
        parts.append(f"<span class=small>{escape(shown)}</span>")
    if cell.get("message"):
        parts.append(f"<span class=small>{escape(cell['message'])}</span>")
    return f"<td class='o-{escape(outcome)}'>{'<br>'.join(parts)}</td>"


def matrix_html(matrix: MatrixDocument) -> str:
    columns = matrix["runtimes"]
    head = "".join(
        f"<th>{escape(c['runtime'])}<br><a href='{escape(c['report'])}'>"
        f"{escape(c['run_id'])}</a><br><span class=small>exit {c['pytest_exit']}; "
        + escape(", ".join(f"{k} {v}" for k, v in sorted(c["outcomes"].items()) if v))
        + "</span></th>"
        for c in columns
    )
    rows = []
    for row in matrix["cases"]:
        cls = "" if row["agree"] else " class=disagree"
        cells = "".join(_html_cell(row["cells"][c["runtime"]]) for c in columns)
        rows.append(
            f"<tr{cls}><td class=case>{escape(row['board'])}<br>"
            f"<span class=small>{escape(row['nodeid'])}</span></td>{cells}</tr>"
        )
    count = matrix["disagreements"]
    verdict = (
        f"{count} case(s) differ between runtimes (listed first)"
        if count
        else "every case has the same outcome on every runtime"
    )
    return (
        "<!doctype html><html><head><meta charset=utf-8><title>npu-hil runtime matrix</title>"
        f"<style>{CSS}</style></head><body><h1>Runtime matrix</h1><p>{escape(verdict)}</p>"
        f"<table><tr><th>board / test</th>{head}</tr>{''.join(rows)}</table></body></html>\n"
    )
