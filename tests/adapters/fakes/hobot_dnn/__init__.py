"""Fake hobot_dnn for the adapter tests (only ``hobot_dnn.pyeasy_dnn``)."""
