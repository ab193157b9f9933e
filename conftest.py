"""Project-wide test configuration: hypothesis profiles.

``HYPOTHESIS_PROFILE=thorough`` runs many more examples than the default, for a long local run.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# The plugin's own tests drive pytest with pytest's pytester.
pytest_plugins = ("pytester",)

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "thorough", deadline=None, max_examples=2000, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Runs of whole suites in subprocesses (minutes each) go first: under pytest-xdist a long test
# handed out last would leave the other workers idle while it finishes.
# Longest first.
LONG_RUNNING = ("tests/regression/test_suite_over_transports.py", "tests/regression/")


@pytest.fixture(autouse=True)
def _own_board_health(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test keeps board health (which persists across runs) in a folder of its own: a test
    that marks a board bad must not refuse it in another test, nor in this user's own runs."""
    monkeypatch.setenv("NPU_HIL_HEALTH_DIR", str(tmp_path_factory.mktemp("board-health")))


def _rank(item: pytest.Item) -> int:
    return next(
        (i for i, prefix in enumerate(LONG_RUNNING) if item.nodeid.startswith(prefix)),
        len(LONG_RUNNING),
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)
