"""What a vendor unit writes its simulated runtime with: the tensors as a device holds them, the
graph as a runtime reads it, the refusals, the options, and ``base.VendorSim``, the base of every
vendor's simulated runtime. Below both the vendor units (``npu_hil/targets/``) and the simulator
(``npu_hil.harness.sim``), which drives the runtime a unit offers; it imports neither.
"""
