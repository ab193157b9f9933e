"""The scrubber's cheap first look (a text with no secret's marker and shorter than a base64
run is returned as it is) never changes what is removed: for any text, the answer is that of
the full scan."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_hil.harness import redact

PIECES = st.sampled_from(
    [
        "https://u:hunter2@h",
        "a://b:c@",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "PuTTY-User-Key-File-3: ssh-ed25519",
        "b3BlbnNzaC1rZXktdjE",
        "password=",
        "Token:",
        '"api_key": "',
        "passed",
        " = ",
        "'",
        "AbC9" * 17,
        ":",
        "@",
        "/",
        " ",
        "-",
        "x",
        "9",
    ]
)
TEXTS = st.lists(PIECES, max_size=12).map("".join) | st.text(max_size=80)


@settings(max_examples=500, deadline=None)
@given(TEXTS)
def test_the_first_look_never_changes_the_answer(text: str) -> None:
    quick = redact.scrub(text), redact.find_secret(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(redact, "_may_hold_secret", lambda _text: True)
        full = redact.scrub(text), redact.find_secret(text)
    assert quick == full


def test_short_texts_without_markers_are_let_through_and_secrets_are_not() -> None:
    assert not redact._may_hold_secret("rk3588-01 passed in 0.2 s")
    assert redact.scrub("ssh://root:hunter2@board") == f"ssh://root:{redact.REDACTED}@board"
    assert redact.scrub("AbC9" * 16) == redact.REDACTED
