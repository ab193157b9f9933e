"""The JUnit file is written as text, not through an XML tree: whatever a record holds, a parser
reads back exactly the record's (cleaned) text, and a hostile value never adds an element."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from npu_hil.harness.report.junit import junit_chunks, split_nodeid
from npu_hil.harness.report.records import TestRecord, scrubbed
from npu_hil.harness.report.sanitize import clean_text

# Every character XML must escape, quote or that a parser normalises, among ordinary text.
_TEXT = st.text(
    alphabet=st.sampled_from(list("ab <>&\"'\t\n\r;=/]")) | st.characters(), max_size=60
)


@settings(max_examples=200, deadline=None)
@given(message=_TEXT, value=_TEXT, key=_TEXT, board_line=_TEXT)
def test_text_round_trips_through_a_parser(
    message: str, value: str, key: str, board_line: str
) -> None:
    record = scrubbed(
        TestRecord(
            f"t.py::test[{key}]",
            "failed",
            0.25,
            message=message,
            longrepr=message,
            boot_log=board_line,
            properties={f"p.{key}": value},
        )
    )
    root = ET.fromstring(b"".join(junit_chunks([record], {"run_id": key})))
    (case,) = root.iter("testcase")
    assert case.get("name") == split_nodeid(record.nodeid)[1]
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    ((name, text),) = record.properties.items()
    assert props[name] == text
    failure = case.find("failure")
    assert failure is not None and failure.get("message") == record.message
    # Element text: the cleaned text holds no CR for a parser to turn into LF.
    assert (failure.text or "") == record.longrepr
    out = case.find("system-out")
    assert (out.text if out is not None else "") == record.boot_log
    tags = [e.tag for e in case]
    assert tags == ["properties", "failure"] + (["system-out"] if record.boot_log else [])
    suite_props = root.find("properties")
    assert suite_props is not None
    assert {p.get("name"): p.get("value") for p in suite_props} == {"run_id": clean_text(key)}
