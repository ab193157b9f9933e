"""Runtime adapters that need the harness itself (the simulated runtime, ``sim.py``): no part of
the board package. The client sends this folder's adapters beside the board package, as extra
adapters; the agent imports them as ``adapters.<name>``, never as this package."""
