"""Reading an ONNX graph the way every vendor's preflight check does (typed attributes, element
types), with a PreflightError for a graph that breaks the ONNX rules."""

from __future__ import annotations

from typing import Any

from npu_hil.harness.errors import PreflightError


def attribute(node: Any, name: str, default: Any, kind: str) -> Any:
    """The attribute's value, of the type the operator defines (``INT`` or ``INTS``)."""
    import onnx

    for attribute in node.attribute:
        if attribute.name == name:
            if attribute.type != getattr(onnx.AttributeProto, kind):
                got = onnx.AttributeProto.AttributeType.Name(attribute.type)
                raise PreflightError(
                    f"{node.name or node.op_type}: attribute {name} must be {kind}, got {got}"
                )
            return onnx.helper.get_attribute_value(attribute)
    return default


def elem_type_name(value: Any) -> str:
    import onnx

    return str(onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type).name)
