"""The backends, named once: what a run asks for and what an inventory board is."""

from __future__ import annotations

__all__ = ["BACKENDS", "BOARD_BACKENDS"]

BACKENDS = ("auto", "sim", "hw")
"""What a run asks for (``Farm(backend=...)``, ``--backend``): ``auto`` each board as the
inventory says (falling back to sim where allowed), ``sim`` every board simulated, ``hw`` real
boards only."""
BOARD_BACKENDS = ("hw", "sim")
"""What an inventory board is."""
