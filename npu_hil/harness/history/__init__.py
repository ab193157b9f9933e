"""A run's measurements beside the earlier runs of its kind: the store, baselines, regression
findings, flakiness and "failing since", the exports (docs/farm/history.md; the files' schemas:
:mod:`~npu_hil.harness.history.model`). Importing the package imports none of them: the pytest
plugin's options (``--history-keep``) read :data:`DEFAULT_KEEP` here in every pytest run."""

DEFAULT_KEEP = 200
"""How many runs the history index keeps, newest first."""
