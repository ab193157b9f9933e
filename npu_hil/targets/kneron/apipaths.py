"""The ways to run a Kneron KL730 model, as the cross-API check compares them: Kneron PLUS
(``kp.inference``) is the one way, so the check is not applicable to a KL730."""

from __future__ import annotations

from npu_hil.targets.unit import ApiPath

__all__ = ["API_PATHS"]

API_PATHS = (ApiPath("kneron", "Kneron PLUS (kp.inference)", native=True),)
