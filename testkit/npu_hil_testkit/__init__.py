"""Test support, outside the runtime package: what stands up boards for the harness's own tests,
for `npu-hil simfarm` and for a user trying the harness without hardware.

- :mod:`npu_hil_testkit.simfarm` — simulated boards behind real servers on 127.0.0.1 (an OpenSSH
  sshd, serial consoles on pseudo-terminals and ser2net);
- :mod:`npu_hil_testkit.emulated` — aarch64 boards under qemu-user: the Debian arm64 root and the
  board folders made from it.

A run on real boards or on the simulated backend never imports either: only the commands and
the pytest option that start them do (``npu-hil simfarm``, ``--simfarm``).
"""
