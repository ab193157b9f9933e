"""Project-wide test configuration: hypothesis profiles.

``HYPOTHESIS_PROFILE=thorough`` runs many more examples than the default, for a long local run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# The plugin's own tests drive pytest with pytest's pytester.
pytest_plugins = ("pytester",)

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "thorough", deadline=None, max_examples=2000, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
