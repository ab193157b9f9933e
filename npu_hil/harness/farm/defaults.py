"""The farm's defaults the pytest plugin declares its options with, so that declaring them in
every pytest run imports nothing else of the farm."""

from __future__ import annotations

from typing import Literal

BACKENDS = ("auto", "sim", "hw")
"""What a run asks for (``Farm(backend=...)``, ``--backend``): ``auto`` each board as the
inventory says (falling back to sim where allowed), ``sim`` every board simulated, ``hw`` real
boards only."""
BoardBackend = Literal["hw", "sim"]
"""What an inventory board is."""
DEFAULT_RETRIES = 1
"""Retries of a model run after an infrastructure failure."""
DEFAULT_BACKOFF_S = 1.0
"""Seconds before the first retry, doubled for each further one."""
DEFAULT_THRESHOLD = 3
"""Infrastructure failures in a row that open a board's circuit breaker."""
