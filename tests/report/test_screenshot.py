"""report.html in a real headless Chromium (CI installs chromium): a screenshot, then the page
used as a reader would: filters hide rows, the search box narrows, a failing matrix cell is red
and its link shows its cases; and a report of more than 1,000 cases builds fast and stays usable.
"""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest

from npu_hil.harness.report.records import TestRecord
from npu_hil.harness.report.writer import write_run
from tests.report.chromium import CHROMIUM, Chromium
from tests.report.conftest import make_record

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (CI installs it: apt-get install chromium)"
)
RED = "rgb(229, 57, 53)"  # td.cell-fail


@pytest.fixture
def browser(tmp_path: Path) -> Chromium:
    chromium = Chromium(tmp_path / "profile")
    yield chromium  # type: ignore[misc]
    chromium.close()


def _visible(browser: Chromium, selector: str = "tr.case") -> list[str]:
    return list(
        browser.js(
            f"Array.from(document.querySelectorAll('{selector}'))"
            ".filter(r => !r.hidden).map(r => r.dataset.board + '/' + r.dataset.outcome)"
        )
    )


def _set(browser: Chromium, element: str, value: str, event: str) -> None:
    browser.js(
        f"(() => {{const e = document.getElementById('{element}'); e.value = '{value}';"
        f"e.dispatchEvent(new Event('{event}')); }})()"
    )


@needs_chromium
def test_report_renders_and_filters_in_headless_chromium(
    sample_records: tuple[Path, list[TestRecord]], tmp_path: Path, browser: Chromium
) -> None:
    run_dir, records = sample_records
    for record in records:
        record.layout = "NC1HWC2" if record.board == "rk3588-01" else "NHWC"
    write_run(run_dir, records, {"started": "2026-01-01T00:00:00Z"})
    browser.open((run_dir / "report.html").resolve().as_uri())
    png = browser.screenshot()
    (tmp_path / "shot.png").write_bytes(png)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1280, 2000)
    # a blank page compresses to a few kB; a rendered report with tables and a heatmap does not
    assert len(png) > 20_000, f"screenshot is only {len(png)} bytes"

    # failures first and open; passes collapsed
    assert browser.js("document.getElementById('folded').open") is False
    first = browser.js("document.querySelector('#failures tr.case').dataset.outcome")
    assert first in ("failed", "error")
    assert len(_visible(browser)) == 5

    # the matrix: the failing layout's cell is red, a passing one is not
    cell = 'document.querySelector(\'td[data-board="rk3588-01"][data-layout="NC1HWC2"]\')'
    assert browser.js(f"getComputedStyle({cell}).backgroundColor") == RED
    ok_cell = 'document.querySelector(\'td[data-board="rdk-x5-01"][data-layout="NHWC"]\')'
    assert browser.js(f"getComputedStyle({ok_cell}).backgroundColor") != RED

    # filtering hides rows
    _set(browser, "f-outcome", "failed", "change")
    assert _visible(browser) == ["rk3588-01/failed"]
    assert "outcome=failed" in browser.js("location.hash")
    _set(browser, "f-outcome", "", "change")
    _set(browser, "f-board", "kl730-01", "change")
    assert sorted(_visible(browser)) == ["kl730-01/error", "kl730-01/skipped"]
    _set(browser, "f-board", "", "change")
    _set(browser, "f-q", "RDK-X5-01-E", "input")  # case e, by its id, in any case
    assert _visible(browser) == ["rdk-x5-01/passed"]
    assert browser.js("document.getElementById('folded').open") is True  # a hit among passes
    assert browser.js("document.getElementById('count').textContent") == "1 of 5 cases"
    browser.js("document.getElementById('f-reset').click()")
    assert len(_visible(browser)) == 5

    # the failing cell's link shows its cases
    browser.js(f"{cell}.querySelector('a').click()")
    browser.js("new Promise(r => setTimeout(r, 50))")
    assert sorted(_visible(browser)) == ["rk3588-01/failed", "rk3588-01/passed"]
    assert browser.js("document.getElementById('f-layout').value") == "NC1HWC2"
    # nothing was fetched from anywhere but the file itself
    urls = browser.js("performance.getEntriesByType('resource').map(e => e.name)")
    assert urls == []


def big_run(count: int) -> list[TestRecord]:
    boards = [(f"{t}-{i:02d}", t) for t in ("rk3588", "rk3566", "kl730", "rdk-x5") for i in (1, 2)]
    layouts = ["NCHW", "NHWC", "NC1HWC2", "1W16C8B", "strided"]
    records = []
    for n in range(count):
        board, target = boards[n % len(boards)]
        outcome = "failed" if n % 97 == 0 else "skipped" if n % 41 == 0 else "passed"
        record = make_record(f"case{n:04d}", outcome, board=board, target=target)
        record.layout = layouts[n % len(layouts)]
        records.append(record)
    return records


@needs_chromium
def test_a_report_of_1200_cases_builds_fast_and_stays_usable(
    tmp_path: Path, browser: Chromium
) -> None:
    run_dir = tmp_path / "reports" / "20260101T000000Z-bbbbbb"
    records = big_run(1200)
    started = time.perf_counter()
    write_run(run_dir, records, {"started": "2026-01-01T00:00:00Z"})
    build_s = time.perf_counter() - started
    size = (run_dir / "report.html").stat().st_size
    print(f"1200 cases: report.html {size / 1024:.0f} KiB, write_run {build_s:.2f} s")
    assert build_s < 10 and size < 3_000_000
    opened = time.perf_counter()
    browser.open((run_dir / "report.html").resolve().as_uri())
    load_s = time.perf_counter() - opened
    assert browser.js("document.querySelectorAll('tr.case').length") == 1200
    # the passes are collapsed: the page is short until the reader opens them
    height = browser.js("document.documentElement.scrollHeight")
    assert height < 10_000, height
    failing = sum(r.outcome == "failed" for r in records)
    assert browser.js("document.querySelectorAll('#failures tr.case').length") == failing
    took = browser.js(
        "(() => {const t = performance.now(); const e = document.getElementById('f-q');"
        "e.value = 'case0042'; e.dispatchEvent(new Event('input'));"
        "return performance.now() - t;})()"
    )
    print(f"page load {load_s:.2f} s, one search over 1200 rows {took:.1f} ms")
    assert len(_visible(browser)) == 1
    assert took < 500 and load_s < 15
    print(f"page height with the passes collapsed: {height} px")
