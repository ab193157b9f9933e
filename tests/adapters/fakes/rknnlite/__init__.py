"""Fake rknn-toolkit-lite2 for the adapter tests (only ``rknnlite.api.RKNNLite``)."""
