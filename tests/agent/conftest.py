"""Every raw agent session a test opens is finished by the test: one left running is killed here
and fails the test that left it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.agent.jobs import RawSession


@pytest.fixture(autouse=True)
def _raw_sessions_finished() -> Iterator[None]:
    yield
    left = [raw for raw in RawSession.opened if raw.process.returncode is None]
    RawSession.opened.clear()
    for raw in left:
        raw.process.kill()
        raw.process.communicate(timeout=30)
    assert not left, f"{len(left)} raw agent session(s) left running (finish() each one)"
