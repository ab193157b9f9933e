"""Rockchip's compiler (rknn-toolkit2, the ``rknn`` extra) driven for ``npu-hil models build``:
:mod:`.build` (jobs, calibration data, the child processes), :mod:`.child` (what runs inside the
toolkit's process) and :mod:`.artifact` (the tensor table of a compiled ``.rknn`` file)."""
