"""BFCL function documents as JSON Schema tools (each backend kind writes them in its own wire format).

BFCL writes parameter types its own way (``dict``, ``float``, ``tuple``, ``any``) and names
functions with dots (``math.factorial``). Tool names in the OpenAI and Bedrock APIs must match
``^[a-zA-Z0-9_-]{1,64}$``, so a dot becomes ``_``, as BFCL's own OpenAI and Amazon handlers do;
its AST checker maps the expected names the same way before comparing. Types map to JSON Schema
as BFCL's handlers map them (``dict`` -> object, ``float`` -> number with ``format: float`` and a
note in the description, ``tuple`` -> array, ``any`` and unknown types -> string).
"""

from __future__ import annotations

import copy
from typing import Any, Final, Mapping

JSON_TYPES: Final = {
    "integer": "integer", "number": "number", "float": "number", "string": "string", "boolean": "boolean",
    "bool": "boolean", "array": "array", "list": "array", "dict": "object", "object": "object",
    "tuple": "array", "any": "string",
}  # fmt: skip
FLOAT_NOTE: Final = " This is a float type value."
"""Appended to a float parameter's description, as BFCL's OpenAI handler does."""


def tool_name(name: str) -> str:
    """The name a BFCL function is offered under (dots become underscores)."""
    return name.replace(".", "_")


def json_schema(node: Mapping[str, Any]) -> dict[str, Any]:
    """One BFCL parameter schema as JSON Schema (a deep copy; the case is not changed)."""
    out = copy.deepcopy(dict(node))
    _convert(out)
    return out


def _convert(node: dict[str, Any]) -> None:
    bfcl_type = node.get("type")
    if isinstance(bfcl_type, str):
        node["type"] = JSON_TYPES.get(bfcl_type, "string")
        if bfcl_type == "float":
            node["format"] = "float"
            node["description"] = str(node.get("description", "")) + FLOAT_NOTE
    props = node.get("properties")
    if isinstance(props, dict):
        for key, child in props.items():
            if isinstance(child, dict):
                child.setdefault("type", "string")
                _convert(child)
            else:
                props[key] = {"type": "string"}
    items = node.get("items")
    if isinstance(items, dict):
        _convert(items)


def parameters(function: Mapping[str, Any]) -> dict[str, Any]:
    """A function's parameters as a JSON Schema object."""
    schema = json_schema(function.get("parameters") or {})
    schema["type"] = "object"
    schema.setdefault("properties", {})
    return schema
