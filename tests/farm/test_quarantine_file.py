"""The quarantine file: its entries, each error at its file:line:column, and what an entry
matches."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from npu_hil.harness.farm.quarantine import (
    QuarantineError,
    expired_entries,
    parse_quarantine,
    read_quarantine,
)
from npu_hil.harness.report.records import TestRecord
from tests.damage import plant

GOOD = """\
quarantine:
  - test: "tests/test_heads.py::test_head*"
    target: t1
    reason: output 3 off by one row since runtime 2.3
    link: https://tracker.example/issues/123
    expires: 2027-01-31
  - test: "tests/test_heads.py::test_tail[b-02]"
    board: b-02
    reason: "known"
    expires: "2027-02-01"
"""


def test_entries_are_read_with_their_positions() -> None:
    first, second = parse_quarantine(GOOD, source="q.yaml")
    assert first.test == "tests/test_heads.py::test_head*"
    assert (first.target, first.board, first.link) == (
        "t1",
        None,
        "https://tracker.example/issues/123",
    )
    # A bare YAML date and a quoted one are the same date.
    assert first.expires == date(2027, 1, 31) and second.expires == date(2027, 2, 1)
    assert first.where == "q.yaml:2:5" and second.where == "q.yaml:7:5"
    assert second.label == "quarantine[1] (q.yaml:7:5), test 'tests/test_heads.py::test_tail[b-02]'"
    assert first.to_dict() == {
        "test": "tests/test_heads.py::test_head*",
        "reason": "output 3 off by one row since runtime 2.3",
        "expires": "2027-01-31",
        "entry": "quarantine[0] (q.yaml:2:5)",
        "target": "t1",
        "link": "https://tracker.example/issues/123",
    }


def test_what_an_entry_matches() -> None:
    head, tail = parse_quarantine(GOOD, source="q.yaml")
    node = "tests/test_heads.py::test_head_a[b-01]"
    # The pattern covers the id without its parameters, on the entry's target only.
    assert head.matches(node, board="b-01", target="t1")
    assert not head.matches(node, board="b-01", target="t2")
    assert not head.matches(node, board=None, target=None)
    assert not head.matches("tests/test_heads.py::test_tail[b-01]", board="b-01", target="t1")
    # An id written out in full matches itself, brackets and all (no fnmatch character class).
    assert tail.matches("tests/test_heads.py::test_tail[b-02]", board="b-02", target="t1")
    assert not tail.matches("tests/test_heads.py::test_tail[b-01]", board="b-02", target="t1")
    assert not tail.matches("tests/test_heads.py::test_tail[b-02]", board="b-01", target="t1")


def test_expiry_is_inclusive_of_its_day() -> None:
    entries = parse_quarantine(GOOD)
    assert expired_entries(entries, date(2027, 1, 31)) == []
    assert [e.index for e in expired_entries(entries, date(2027, 2, 1))] == [0]
    assert [e.index for e in expired_entries(entries, date(2027, 2, 2))] == [0, 1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "q.yaml:1:1: expected a mapping with a quarantine list, got an empty file"),
        ("quarantine: {}\n", "q.yaml:1:13: quarantine: expected a list of entries, got a mapping"),
        (
            "quarantine:\n  - {test: a, reason: r}\n",
            "q.yaml:2:5: quarantine[0]: expected expires, a date YYYY-MM-DD (every entry has "
            "test, reason, expires)",
        ),
        (
            "quarantine:\n  - {test: a, reason: r, expires: soon}\n",
            'q.yaml:2:35: quarantine[0].expires: expected a date YYYY-MM-DD, got "soon"',
        ),
        (
            "quarantine:\n  - {test: a, reason: r, expires: 2027-02-30}\n",
            "q.yaml:2:35: quarantine[0].expires: expected a date YYYY-MM-DD, got 2027-02-30: ",
        ),
        (
            "quarantine:\n  - {test: a, reason: r, expires: 2027-01-01, link: tracker}\n",
            'q.yaml:2:53: quarantine[0].link: expected an http(s) URL, got "tracker"',
        ),
        (
            "quarantine:\n  - {test: a, reasons: r, expires: 2027-01-01}\n",
            "q.yaml:2:15: quarantine[0].reasons: unknown key (expected one of test, target, "
            "board, reason, link, expires); did you mean 'reason'?",
        ),
        (
            "quarantine:\n  - {test: a, reason: 2024, expires: 2027-01-01}\n",
            "q.yaml:2:23: quarantine[0].reason: expected a non-empty string, got 2024",
        ),
        (
            "quarantine:\n  - {test: !!python/name:os.system a, reason: r, expires: 2027-01-01}\n",
            "q.yaml:2:12: the YAML tag 'tag:yaml.org,2002:python/name:os.system' is not taken",
        ),
        ("quarantine: [\n", "q.yaml:2:1: not valid YAML: "),
    ],
)
def test_errors_name_file_line_and_column(text: str, expected: str) -> None:
    with pytest.raises(QuarantineError) as caught:
        parse_quarantine(text, source="q.yaml")
    assert caught.value.message.startswith(expected), caught.value.message


def test_records_written_before_these_fields_still_load() -> None:
    old = {"nodeid": "t.py::test_a[b-01]", "outcome": "passed", "duration_s": 0.1}
    record = TestRecord.from_dict(old)
    assert record.unstable == "" and record.quarantine == {}
    assert TestRecord.from_dict(record.to_dict()) == record


@pytest.mark.parametrize("how", ["fifo", "dev-zero", "folder", "huge", "not-utf8"])
def test_a_quarantine_file_that_cannot_be_one_is_refused_at_once(tmp_path: Path, how: str) -> None:
    path = tmp_path / "quarantine.yaml"
    plant(path, how)
    with pytest.raises(QuarantineError, match="cannot read the quarantine file") as caught:
        read_quarantine(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
