"""BFCL function documents as each backend's tool definitions.

BFCL writes parameter types its own way (``dict``, ``float``, ``tuple``, ``any``) and names
functions with dots (``math.factorial``). Tool names in the OpenAI and Bedrock APIs must match
``^[a-zA-Z0-9_-]{1,64}$``, so a dot becomes ``_``, as BFCL's own OpenAI and Amazon handlers do;
its AST checker maps the expected names the same way before comparing. Types map to JSON Schema
as BFCL's handlers map them (``dict`` -> object, ``float`` -> number with ``format: float`` and a
note in the description, ``tuple`` -> array, ``any`` and unknown types -> string).
"""

from __future__ import annotations

import copy
from typing import Any, Final, Mapping, Sequence

JSON_TYPES: Final = {
    "integer": "integer", "number": "number", "float": "number", "string": "string", "boolean": "boolean",
    "bool": "boolean", "array": "array", "list": "array", "dict": "object", "object": "object",
    "tuple": "array", "any": "string",
}  # fmt: skip
FLOAT_NOTE: Final = " This is a float type value."
"""Appended to a float parameter's description, as BFCL's OpenAI handler does."""

_CONSTRAINED_KEYS: Final = ("type", "properties", "required", "items", "enum")


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


def openai_tools(functions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The OpenAI chat-completions ``tools`` field (vLLM, llama.cpp, the SageMaker vLLM container)."""
    return [{"type": "function", "function": {"name": tool_name(f["name"]), "description": f.get("description") or
             f["name"], "parameters": parameters(f)}} for f in functions]  # fmt: skip


def bedrock_tool_config(functions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The Converse API's ``toolConfig`` (Bedrock requires a non-empty description)."""
    return {
        "tools": [{"toolSpec": {"name": tool_name(f["name"]), "description": f.get("description") or f["name"],
                                "inputSchema": {"json": parameters(f)}}} for f in functions],
        "toolChoice": {"auto": {}},
    }  # fmt: skip


def _plain(node: Mapping[str, Any]) -> dict[str, Any]:
    """Only the keywords a grammar needs (llama.cpp rejects some it does not know)."""
    out: dict[str, Any] = {k: node[k] for k in _CONSTRAINED_KEYS if k in node}
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _plain(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _plain(out["items"])
    return out


def constrained_schema(functions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A JSON schema whose instances are ``{"calls": [...]}``: zero or more calls of the offered
    functions, each ``{"name": <tool name>, "arguments": {...}}`` (for a server that cannot call
    tools itself: its grammar enforces the shape, the model still picks the calls)."""
    options = []
    for f in functions:
        args = _plain(parameters(f))
        args["additionalProperties"] = False
        options.append({"type": "object", "properties": {"name": {"const": tool_name(f["name"])}, "arguments": args},
                        "required": ["name", "arguments"], "additionalProperties": False})  # fmt: skip
    return {
        "type": "object",
        "properties": {"calls": {"type": "array", "items": options[0] if len(options) == 1 else {"anyOf": options}}},
        "required": ["calls"],
        "additionalProperties": False,
    }


def constrained_prompt(functions: Sequence[Mapping[str, Any]]) -> str:
    """The system turn that lists the functions for a constrained reply."""
    lines = ["You can call these functions. Reply with JSON: {\"calls\": [{\"name\": <function>, \"arguments\": "
             "{...}}, ...]}, listing every call the request needs, or an empty list when no function fits.", ""]
    for f in functions:
        props = parameters(f)["properties"]
        args = "; ".join(f"{k} ({v.get('type', 'string')}): {v.get('description', '')}".strip()
                         for k, v in props.items())
        lines.append(f"- {tool_name(f['name'])}: {f.get('description', '')} Arguments: {args or 'none'}.")
    return "\n".join(lines)
