"""The regression suite ``npu-hil nightly`` runs, shipped in the package so an installed npu-hil
runs it anywhere (docs/farm/nightly.md)."""
