"""The Horizon preflight: the seeds give the BPU no convolution width limits; an NV12 input must
have even H and W (seeds/003)."""

from __future__ import annotations

from npu_hil.targets.unit import PreflightContext, PreflightFinding


def preflight(report: PreflightContext) -> None:
    report.notes.append(f"the seeds give no convolution width limits for {report.target}")
    if (report.input_type or "").lower() != "nv12":
        return
    for value in report.inputs:
        shape = report.shapes.get(value.name) or []
        if len(shape) != 4:
            continue
        h, w = (shape[1], shape[2]) if shape[3] in (1, 3) else (shape[2], shape[3])
        ok = h is not None and w is not None and h % 2 == 0 and w % 2 == 0
        report.findings.append(
            PreflightFinding(
                value.name,
                "NV12 even H and W",
                ok,
                f"{value.name}: NV12 input {h}x{w}"
                + ("" if ok else ": H and W must be even (seeds/003)"),
            )
        )
