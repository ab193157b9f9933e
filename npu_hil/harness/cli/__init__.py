"""The ``npu-hil`` command line."""
