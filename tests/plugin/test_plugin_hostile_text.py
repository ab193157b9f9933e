"""A real pytest run whose failure messages hold what a device or a runtime may print: lone
surrogates, NUL, ESC sequences, C1 controls, bidi overrides. The report is still written, every
file of it parses, and no such character reaches it raw."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

HOSTILE = """
import pytest

@pytest.mark.soc("rk3588")
def test_hostile_message(board):
    raise AssertionError("bad \\udc80 byte, nul \\x00, \\x1b[31mred\\x1b[0m, nel \\x85, "
                         "evil \\u202egnp.exe\\u202c, iso \\u2066x\\u2069, \\ufffe")

@pytest.mark.soc("rk3588")
def test_hostile_skip(board):
    pytest.skip("skip \\udcff \\x1b]0;title\\x07 \\u202d")

@pytest.mark.soc("rk3588")
def test_fine(board):
    pass
"""

FORBIDDEN = re.compile(
    "[\ud800-\udfff\ufffe\uffff\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _run_dir(project: pytest.Pytester) -> Path:
    runs = [
        p for p in (project.path / "reports").iterdir() if p.is_dir() and not p.name.startswith(".")
    ]
    assert len(runs) == 1, runs
    return runs[0]


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # strict: the file is valid UTF-8


@pytest.mark.slow
def test_hostile_failure_text_gives_a_whole_valid_report(
    project: pytest.Pytester, umask_022: None
) -> None:
    project.makepyfile(HOSTILE)
    # A subprocess of our own: pytest's terminal prints the surrogate as a raw byte, which
    # pytester's strict decoding of the output cannot read.
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA"],
        cwd=project.path,
        capture_output=True,
        timeout=300,
        check=False,
    )
    output = result.stdout.decode("utf-8", "replace")
    assert result.returncode == 1, output
    assert "1 failed, 1 passed, 1 skipped" in output, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    run_dir = _run_dir(project)
    names = {"junit.xml", "summary.json", "comparison.json", "report.html", "records.jsonl"}
    assert names <= {p.name for p in run_dir.iterdir()}

    suite = ET.parse(run_dir / "junit.xml").getroot()
    failure = suite.find(".//testcase/failure")
    assert failure is not None
    message = failure.get("message", "")
    assert "bad \ufffd byte" in message and "nul \\x00" in message
    assert "\\x1b[31mred" in message and "\\u202egnp.exe\\u202c" in message

    summary = json.loads(_text(run_dir / "summary.json"))
    assert summary["records_file"] == "records.jsonl"
    records = [json.loads(line) for line in _text(run_dir / "records.jsonl").splitlines()]
    by_name = {r["nodeid"].split("::")[-1]: r for r in records}
    assert by_name["test_hostile_message[rk3588-01]"]["message"] == message
    assert "\\x1b]0;title\\x07" in by_name["test_hostile_skip[rk3588-01]"]["message"]
    json.loads(_text(run_dir / "comparison.json"))
    for line in _text(run_dir / "records.jsonl").splitlines():
        record = json.loads(line)
        assert FORBIDDEN.search(json.dumps(record, ensure_ascii=False)) is None

    for name in names:
        text = _text(run_dir / name)
        assert FORBIDDEN.search(text) is None, name
        # nor as an escaped lone surrogate in the JSON files
        assert re.search(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", text) is None, name
    html = _text(run_dir / "report.html")
    assert "evil \\u202egnp.exe\\u202c" in html

    # The folder is private; the files in it have the umask's mode.
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    for name in names:
        assert stat.S_IMODE((run_dir / name).stat().st_mode) == 0o644, name
