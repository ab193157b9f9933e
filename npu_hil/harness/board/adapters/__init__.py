"""Runtime adapters the board agent loads by name (``adapters.<name>``); board-side code."""
