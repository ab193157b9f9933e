"""A run's measurements beside the earlier runs of its kind: the store, baselines, regression
findings, flakiness and "failing since", the exports (docs/farm/history.md; the files' schemas:
:mod:`~npu_hil.harness.history.model`)."""
