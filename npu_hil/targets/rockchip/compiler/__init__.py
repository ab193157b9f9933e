"""Rockchip's compiler (rknn-toolkit2, the ``rknn`` extra) driven for ``npu-hil models build``:
:mod:`.build` (jobs, calibration data, the child processes, the vendor unit's compiler hook) and
:mod:`.child` (what runs inside the toolkit's process); the tensor table of a compiled ``.rknn``
file is :mod:`npu_hil.targets.rockchip.artifact`'s."""
