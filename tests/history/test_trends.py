"""The report page's history view: plots as small PNG data URIs, the case rows, the caps, and
the page's History and Regressions sections fed with it."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

import pytest

from npu_hil.harness.history.store import load_history
from npu_hil.harness.history.trends import TrendsView, trends_view
from npu_hil.harness.report.html import history_section, regressions_section
from npu_hil.harness.report.records import TestRecord
from npu_hil.harness.report.writer import HTML_FILE, write_run

A = ("rk3588-01", "tests/hil/test_reference.py::test_reference_model[identity-rk3588-01]")
B = ("kl730-01", "tests/hil/test_reference.py::test_reference_model[conv-kl730-01]")


def view_for_run(reports_root: Path, run_key: str) -> TrendsView | None:
    """The view for a run of kind ``run_key``, None when nothing of that kind is indexed."""
    history = load_history(reports_root, run_key)
    return trends_view(history) if history.runs else None


def png_size(uri: str) -> tuple[int, int]:
    data = base64.b64decode(uri.split(",", 1)[1])
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.slow
def test_the_view_has_plots_and_rows(reports: Path, write: Any) -> None:
    index = write(
        {A: ["passed", "passed", "failed", "failed"], B: ["passed", "failed", "passed", "failed"]},
        p50=lambda i: 0.075 * (1.2 if i == 3 else 1.0),
    )
    view = trends_view(load_history(reports))
    assert [r["run_id"] for r in view["runs"]] == [e.run_id for e in index]
    boards = {b["board"]: b for b in view["boards"]}
    assert list(boards) == ["kl730-01", "rk3588-01"]
    rk = boards["rk3588-01"]
    assert png_size(rk["latency_png"]) == (640, 240)
    assert png_size(rk["pass_rate_png"]) == (640, 240)
    assert len(rk["latency_png"]) < 60_000  # small: a page with 30 boards stays light
    assert rk["pass_rate_per_run"] == [1.0, 1.0, 0.0, 0.0]
    (row,) = rk["cases"]
    assert row["failing_since"] == index[2].run_id and row["failing_since_started"]
    assert row["latency_last_ms"] == 0.075 * 1.2
    assert boards["kl730-01"]["flaky"] == 1 and boards["kl730-01"]["cases"][0]["flakiness"] == 1.0
    assert view["omitted_cases"] == 0 and view["omitted_boards"] == 0

    html = history_section(view)
    assert '<h2 id="history">History</h2>' in html
    assert html.count('<img class="trend"') == 4
    assert index[2].run_id in html and "100%" in html  # kl730's flakiness


@pytest.mark.slow
def test_the_page_is_capped(reports: Path, write: Any) -> None:
    outcomes = {
        (f"board-{b:02d}", f"tests/t.py::test_case[{c:03d}-board-{b:02d}]"): ["passed", "passed"]
        for b in range(35)
        for c in range(8)
    }
    failing = ("board-34", "tests/t.py::test_case[000-board-34]")
    outcomes[("board-00", "tests/t.py::test_case[000-board-00]")] = ["passed", "failed"]
    outcomes[failing] = ["passed", "failed"]
    write(outcomes)
    view = trends_view(load_history(reports), plots=False)
    assert len(view["boards"]) == 30 and view["omitted_boards"] == 5
    drawn = sum(len(b["cases"]) for b in view["boards"])
    assert drawn == 200 and view["omitted_cases"] == 35 * 8 - 200
    # the failing case of a drawn board is drawn first, whatever its place in the order
    assert view["boards"][0]["cases"][0]["failing_since"]
    assert "5 more boards and 80 more cases" in history_section(view)


def test_one_run_draws_no_plot_and_says_so(reports: Path, write: Any) -> None:
    write({A: ["failed"], B: ["passed"]})
    view = trends_view(load_history(reports))
    assert all(b["latency_png"] is None and b["pass_rate_png"] is None for b in view["boards"])
    html = history_section(view)
    assert "One run so far" in html and '<img class="trend"' not in html
    assert "Changed in the last run" not in html


def test_the_section_leads_with_what_changed_fails_and_flips(reports: Path, write: Any) -> None:
    steady = ("rk3588-02", "tests/t.py::test_steady[rk3588-02]")
    new = ("rk3588-02", "tests/t.py::test_new[rk3588-02]")
    write(
        {
            A: ["passed", "passed", "passed", "failed"],  # changed, failing
            B: ["passed", "failed", "passed", "failed"],  # changed, failing, flipping
            steady: ["passed"] * 4,
            new: [None, None, None, "passed"],  # a new case is a change
        }
    )
    view = trends_view(load_history(reports), plots=False)
    found = view["highlights"]
    assert {(c["board"], c["nodeid"]) for c in found["changed"]["cases"]} == {A, B, new}
    assert {(c["board"], c["nodeid"]) for c in found["failing"]["cases"]} == {A, B}
    assert [(c["board"], c["nodeid"], c["flips"]) for c in found["flipping"]["cases"]] == [(*B, 3)]
    html = history_section(view)
    lead, folded = html.split("<details", 1)
    assert "Changed in the last run</b> (3)" in lead and "passed → failed" in lead
    assert "not run → passed" in lead and "Flipping (more than once)</b> (1)" in lead
    assert steady[1] not in lead and steady[1] in folded  # steady cases only in the full list
    assert folded.count("</details>") == 1


def test_regressions_section_lists_the_findings_and_nothing_when_absent() -> None:
    assert regressions_section({}) == ""
    assert regressions_section({"regressions": []}) == ""
    finding = {
        "board": "rk3588-01",
        "nodeid": A[1],
        "metric": "p50_ms",
        "value": 0.09,
        "severity": "failure",
        "band": {
            "median": 0.075,
            "low": 0.0675,
            "high": 0.0825,
            "mad": 0.001,
            "k": 3.0,
            "runs": ["20261101T020000Z-000000", "20261102T020000Z-000001"],
        },
        "message": "p50_ms 0.090 ms above its baseline 0.075 <script>",
    }
    html = regressions_section({"regressions": [finding]})
    assert '<h2 id="regressions">Regressions</h2>' in html
    assert "1 failing" in html and "0.0675..0.0825" in html and "2 runs" in html
    assert "&lt;script&gt;" in html and "<script>" not in html


@pytest.mark.slow
def test_write_run_puts_the_history_on_the_page(reports: Path, write: Any) -> None:
    write({A: ["passed", "failed", "failed"], B: ["passed"] * 3}, run_key="kind-1")
    view = view_for_run(reports, "kind-1")
    assert view is not None and view_for_run(reports, "no-such-kind") is None
    run_dir = reports / "20261201T020000Z-aaaaaa"
    records = [
        TestRecord(
            nodeid=A[1],
            outcome="failed",
            duration_s=0.2,
            board=A[0],
            target="rk3588",
            backend="sim",
            simulated=True,
            message="buffers differ",
        )
    ]
    write_run(run_dir, records, {"run_key": "kind-1"}, trends=view)
    page = (run_dir / HTML_FILE).read_text(encoding="utf-8")
    assert '<h2 id="history">History</h2>' in page and "data:image/png;base64," in page
    assert '<h2 id="regressions">' not in page  # the summary has none
    write_run(run_dir, records, {"run_key": "kind-1"})
    assert '<h2 id="history">' not in (run_dir / HTML_FILE).read_text(encoding="utf-8")
