"""The backends, named once: what a run asks for and what an inventory board is."""

from __future__ import annotations

from typing import Literal

__all__ = ["BACKENDS", "BoardBackend"]

BACKENDS = ("auto", "sim", "hw")
"""What a run asks for (``Farm(backend=...)``, ``--backend``): ``auto`` each board as the
inventory says (falling back to sim where allowed), ``sim`` every board simulated, ``hw`` real
boards only."""
BoardBackend = Literal["hw", "sim"]
"""What an inventory board is."""
