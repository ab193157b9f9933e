"""Each case's JUnit element and page row made as its record arrives: the report written from
them is byte for byte the report written at the end from the records alone, whatever the run
held (reruns of a case, failures shown open, a case new since the run compared with)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from npu_hil.harness.report.records import TestRecord, scrubbed
from npu_hil.harness.report.writer import HTML_FILE, JUNIT_FILE, CaseTexts, write_run

_CASE = st.tuples(
    st.integers(min_value=0, max_value=5),  # which test: the same number is a rerun
    st.sampled_from(["passed", "failed", "error", "skipped", "quarantined"]),
    st.text(max_size=20),
)


def _record(number: int, outcome: str, message: str) -> TestRecord:
    return scrubbed(
        TestRecord(
            f"t.py::test_case[{number}]",
            outcome,
            0.5,
            board="rk3588-01",
            target="rk3588",
            message=message,
            longrepr=message if outcome in ("failed", "error") else "",
            quarantine={"reason": "known"} if outcome == "quarantined" else {},
        )
    )


def _written(run_dir: Path, records: list[TestRecord], texts: CaseTexts | None) -> bytes:
    meta = {"run_id": run_dir.name, "started": "2026-12-01T00:00:00Z"}
    write_run(run_dir, records, meta, history=None, trends=None, scrubbed=True, texts=texts)
    page = (run_dir / HTML_FILE).read_bytes()
    return (run_dir / JUNIT_FILE).read_bytes() + b"\0" + page


@settings(max_examples=60, deadline=None)
@given(cases=st.lists(_CASE, min_size=1, max_size=12), shown_new=st.integers(0, 5))
def test_the_report_from_texts_made_on_arrival_is_the_report_made_at_the_end(
    tmp_path_factory: object, cases: list[tuple[int, str, str]], shown_new: int
) -> None:
    base = tmp_path_factory.mktemp("runs")  # type: ignore[attr-defined]
    records = [_record(*case) for case in cases]
    # A previous run in which test shown_new passed: failing now, it is shown "NEW".
    previous = base / "20261201T000000Z-aaaaaa"
    write_run(previous, [_record(shown_new, "passed", "")], {"run_id": previous.name})
    plain, made = base / "20261202T000000Z-bbbbbb", base / "20261202T000000Z-cccccc"
    texts = CaseTexts(made)
    for record in records:
        texts.add(record)
    expected = _written(plain, records, None).replace(plain.name.encode(), b"RUN")
    assert _written(made, records, texts).replace(made.name.encode(), b"RUN") == expected


def test_a_record_not_seen_arriving_is_rendered_at_the_end(tmp_path: Path) -> None:
    seen, unseen = _record(1, "failed", "one"), _record(2, "failed", "two")
    texts = CaseTexts(tmp_path / "made")
    texts.add(seen)
    # An equal record that is not the one added: its own text, never the cached one's.
    twin = _record(1, "failed", "one")
    twin.message = "changed after"
    assert b"changed after" in texts.junit(twin) and b"changed after" not in texts.junit(seen)
    write_run(tmp_path / "made", [seen, unseen], {"run_id": "made"}, scrubbed=True, texts=texts)
    summary = json.loads((tmp_path / "made" / "summary.json").read_text())
    assert summary["outcomes"]["failed"] == 2
    assert "two" in (tmp_path / "made" / JUNIT_FILE).read_text()
