"""The regression suite ``npu-hil nightly`` runs: every layout the vendor tables list, every
reference model and the refusals the tables promise, on every board of the inventory.

It ships inside the package so that an installed npu-hil runs its nightly wherever the user
stands (``npu-hil nightly``, or ``pytest --pyargs npu_hil.harness.suite``); it needs nothing but
npu-hil and its dependencies.
"""
