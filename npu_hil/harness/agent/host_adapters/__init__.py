"""Runtime adapters that need the harness (the simulated runtime): sent beside the board package
as extra adapters, imported there as ``adapters.<name>``, never as this package."""
