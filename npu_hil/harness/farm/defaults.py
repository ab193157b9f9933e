"""The farm's recovery defaults, named once: the library's arguments
(:mod:`npu_hil.harness.farm.recovery`, :mod:`npu_hil.harness.farm.breaker`) and the pytest
plugin's options (``--hil-retries``, ``npu_hil_retry_backoff``, ``--hil-breaker``) read them here,
so that declaring the options in every pytest run imports nothing else of the farm."""

from __future__ import annotations

__all__ = ["DEFAULT_BACKOFF_S", "DEFAULT_RETRIES", "DEFAULT_THRESHOLD"]

DEFAULT_RETRIES = 1
"""Retries of a model run after an infrastructure failure."""
DEFAULT_BACKOFF_S = 1.0
"""Seconds before the first retry, doubled for each further one."""
DEFAULT_THRESHOLD = 3
"""Infrastructure failures in a row that open a board's circuit breaker."""
