"""``kp.ApiKPException``: PLUS raises it with a KP_API_RETURN_CODE."""

from __future__ import annotations

from .enum import ApiReturnCode


class ApiKPException(Exception):
    def __init__(self, error_code: int, message: str = "") -> None:
        try:
            self.api_return_code: int = ApiReturnCode(error_code)
        except ValueError:
            self.api_return_code = error_code
        super().__init__(f"Error raised in function: {message} ({int(error_code)})")
