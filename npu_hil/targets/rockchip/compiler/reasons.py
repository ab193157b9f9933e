"""A refused build's reason in one line, as the measured data keep it: the compiler's own error
line without its time stamp (``E RKNN: [12:05:07.196] failed to tile argb mode layer!``), else
the Python exception the toolkit stopped on and the function it left, else the whole reason
(:class:`~npu_hil.targets.rockchip.compiler.build.BuildFailure` joins its reason and the log's
last lines with ``" / "``)."""

from __future__ import annotations

__all__ = ["compiler_reason"]


def compiler_reason(text: str) -> str:
    parts = [part.strip() for part in text.split(" / ")]
    for part in parts:
        if part.startswith("E RKNN:"):
            return part.split("] ", 1)[-1].strip().rstrip("!")
    errors = [part for part in parts if "Error" in part.split(":", 1)[0]]
    frames = [part.rsplit(" in ", 1)[-1] for part in parts if part.startswith("File ")]
    if errors:
        return errors[-1] + (f" (in {frames[-2 if len(frames) > 1 else -1]})" if frames else "")
    return text
