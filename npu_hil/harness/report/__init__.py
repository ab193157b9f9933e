"""Run reports under ``reports/<run-id>/``: the records, JUnit XML, the JSON summary, the HTML page
and the comparison with earlier runs (:mod:`npu_hil.harness.report.writer` writes them all).

Nothing is imported here: the plugin reads the light :mod:`npu_hil.harness.report.records` in
every pytest run, and importing this package must not pull in the report writers with it.
"""
