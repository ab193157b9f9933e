"""A run's measurements kept beside the earlier runs of its kind: the history store, baselines with
a noise band, regression findings, flakiness and "failing since", and the exports.

No server: one small ``measurements.json`` per run folder plus ``history.json`` (the index) at
the reports root (:mod:`~npu_hil.harness.history.model` has both schemas).
"""
