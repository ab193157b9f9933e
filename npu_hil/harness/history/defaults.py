"""The history's defaults, named once: the store's arguments and the pytest plugin's options
(``--history-keep``) read them here, so that declaring the options in every pytest run imports
nothing of the store (its file lock, the report's modules)."""

from __future__ import annotations

DEFAULT_KEEP = 200
"""How many runs the history index keeps, newest first."""
