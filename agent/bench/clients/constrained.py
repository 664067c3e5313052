"""The local rig's quirk: a model without a tool-call template, whose tool use the server's grammar holds
to a JSON schema. Every report labels such a backend **constrained**: it is never the model's own tool use.

* Tool requests (BFCL, the quality lane never offers tools): the tools are listed in a system turn and
  the reply is held by ``response_format`` to ``{"calls": [...]}``; :func:`read_calls` takes the calls
  from that JSON.
* Agents: :class:`ConstrainedToolModel`, whose first turn asks llama-server for a JSON-schema-
  constrained choice among the tools.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator
from typing import Any, Mapping, Sequence

from strands.models.openai import OpenAIModel
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolChoice, ToolSpec

from .openai_wire import chat_body as openai_chat_body
from .reply import ChatRequest, Reply, Tool

_SCHEMA_KEYS = ("type", "properties", "required", "items", "enum")


# --- tool requests ---------------------------------------------------------------------------


def _plain(node: Mapping[str, Any]) -> dict[str, Any]:
    """Only the keywords a grammar needs (llama.cpp rejects some it does not know)."""
    out: dict[str, Any] = {k: node[k] for k in _SCHEMA_KEYS if k in node}
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _plain(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _plain(out["items"])
    return out


def calls_schema(tools: Sequence[Tool]) -> dict[str, Any]:
    """A JSON schema whose instances are ``{"calls": [...]}``: zero or more calls of the offered
    tools, each ``{"name": <tool name>, "arguments": {...}}`` (the grammar enforces the shape, the
    model still picks the calls)."""
    options = []
    for t in tools:
        args = _plain(t.parameters)
        args["additionalProperties"] = False
        options.append({"type": "object", "properties": {"name": {"const": t.name}, "arguments": args},
                        "required": ["name", "arguments"], "additionalProperties": False})  # fmt: skip
    return {
        "type": "object",
        "properties": {"calls": {"type": "array", "items": options[0] if len(options) == 1 else {"anyOf": options}}},
        "required": ["calls"],
        "additionalProperties": False,
    }


def calls_prompt(tools: Sequence[Tool]) -> str:
    """The system turn that lists the tools for a constrained reply."""
    lines = ["You can call these functions. Reply with JSON: {\"calls\": [{\"name\": <function>, \"arguments\": "
             "{...}}, ...]}, listing every call the request needs, or an empty list when no function fits.", ""]
    for t in tools:
        props = t.parameters.get("properties") or {}
        args = "; ".join(f"{k} ({v.get('type', 'string')}): {v.get('description', '')}".strip()
                         for k, v in props.items())
        lines.append(f"- {t.name}: {t.description} Arguments: {args or 'none'}.")
    return "\n".join(lines)


def chat_body(request: ChatRequest, model: str) -> dict[str, Any]:
    """The chat-completions body of a tool request, held to :func:`calls_schema` instead of ``tools``."""
    held = ChatRequest(messages=({"role": "system", "content": calls_prompt(request.tools)}, *request.messages),
                       max_tokens=request.max_tokens, stream=request.stream, temperature=request.temperature)
    payload = openai_chat_body(held, model)
    payload["response_format"] = {"type": "json_schema", "json_schema": {
        "name": "calls", "strict": True, "schema": calls_schema(request.tools)}}
    return payload


def read_calls(reply: Reply) -> None:
    """The calls of a constrained reply (``{"calls": [...]}``); an unreadable one leaves none."""
    try:
        calls = json.loads(reply.text)["calls"]
    except (ValueError, KeyError, TypeError):
        return
    if isinstance(calls, list):
        reply.calls = [{"name": c.get("name"), "arguments": c.get("arguments")} for c in calls if isinstance(c, dict)]


# --- agents: a constrained first turn --------------------------------------------------------



CONSTRAINED_TEXT_MAX_CHARS = 300
"""Longest free-text argument a constrained tool call may hold. Without a bound, SmolLM2 kept
writing inside the orchestrator's ``prompt`` string until the 512-token limit and never made
the call; the server's grammar enforces ``maxLength``."""
CONSTRAINED_ANSWER_MAX_CHARS = 800
"""Longest text answer of a turn held to :data:`ANSWER_SCHEMA`. Unbounded, SmolLM2 wrote on about the
orchestrator's table until the 512-token limit (a failed run every time); bounded, it ends."""
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": CONSTRAINED_ANSWER_MAX_CHARS}},
    "required": ["answer"],
    "additionalProperties": False,
}


def _tool_choice_schema(tool_specs: Sequence[ToolSpec], enums: Mapping[str, Mapping[str, Sequence[Any]]]) -> dict:
    """A JSON schema whose instances are exactly one call of one of ``tool_specs``.

    ``enums`` narrows arguments to allowed values (``{"count_ids": {"op": [">=", ...]}}``), so the
    server's grammar enforces them (a plain string let SmolLM2 write ``"op": "id"``); every other
    string argument is bounded by :data:`CONSTRAINED_TEXT_MAX_CHARS`.
    """
    options = []
    for spec in tool_specs:
        args = json.loads(json.dumps(spec["inputSchema"]["json"]))  # deep copy
        args.setdefault("type", "object")
        args.setdefault("properties", {})
        args["additionalProperties"] = False
        for prop, allowed in enums.get(spec["name"], {}).items():
            if prop in args["properties"]:
                args["properties"][prop] = {**args["properties"][prop], "enum": list(allowed)}
                args["properties"][prop].pop("type", None)
        for prop in args["properties"].values():
            if prop.get("type") == "string" and "enum" not in prop:
                prop.setdefault("maxLength", CONSTRAINED_TEXT_MAX_CHARS)
        options.append(
            {
                "type": "object",
                "properties": {"tool": {"const": spec["name"]}, "arguments": args},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    return options[0] if len(options) == 1 else {"oneOf": options}


def _has_tool_results(messages: Messages) -> bool:
    return any("toolResult" in block for message in messages for block in message.get("content", []))


def _as_plain_text(messages: Messages) -> Messages:
    """The conversation with tool calls and tool results written as text (the chat template of
    a model without tool support has no place for them)."""
    out: list[Any] = []
    for message in messages:
        blocks = []
        for block in message.get("content", []):
            if "toolUse" in block:
                use = block["toolUse"]
                blocks.append({"text": f"I called the tool {use['name']} with {json.dumps(use.get('input'))}."})
            elif "toolResult" in block:
                result = block["toolResult"]
                parts = []
                for item in result.get("content", []):
                    if "json" in item:
                        parts.append(json.dumps(item["json"]))
                    elif "text" in item:
                        parts.append(item["text"])
                blocks.append({"text": f"The tool returned: {' '.join(parts)}"})
            elif "text" in block:
                blocks.append({"text": block["text"]})
        if blocks:
            out.append({"role": message["role"], "content": blocks})
    return out


class ConstrainedToolModel(OpenAIModel):
    """``OpenAIModel`` for a server whose model cannot call tools by itself (the local rig).

    On the first turn of an agent run (tools offered, no tool result yet) it asks the server for
    a reply constrained by a JSON schema to ``{"tool": <name>, "arguments": {...}}`` over the
    offered tools, and returns that as a ``toolUse``. Later turns carry the call and its result
    as plain text and offer no tools, so the model writes the final answer (held to a bounded
    length by :data:`ANSWER_SCHEMA` where a part asks for it: the orchestrator's). Every report
    labels such a backend **constrained**; the grader still judges the call it picked and the
    answer it wrote.

    Args:
        client: The backend's one shared ``AsyncOpenAI``.
        model_id: The served model's name.
        params: Request parameters (``max_tokens``, ``temperature``).
        enums: Allowed values per tool argument, enforced by the schema.
    """

    constrained = True

    def __init__(
        self,
        *,
        client: Any,
        model_id: str,
        params: dict[str, Any] | None = None,
        enums: Mapping[str, Mapping[str, Sequence[Any]]] | None = None,
    ) -> None:
        super().__init__(client=client, model_id=model_id, params=params or {})
        self._shared_client = client
        self.enums: dict[str, Mapping[str, Sequence[Any]]] = dict(enums or {})
        self.bounded_answer = False

    def set_enums(self, enums: Mapping[str, Mapping[str, Sequence[Any]]], *, bounded_answer: bool = False) -> None:
        """Set the allowed argument values for the tools of the next agent run, and whether its text
        answer is held to :data:`ANSWER_SCHEMA`."""
        self.enums = dict(enums)
        self.bounded_answer = bounded_answer

    def _choice_prompt(self, tool_specs: Sequence[ToolSpec], system_prompt: str | None) -> str:
        lines = [system_prompt or "", "", "Choose exactly one tool to call and its arguments. The tools:"]
        for spec in tool_specs:
            props = spec["inputSchema"]["json"].get("properties", {})
            args = ", ".join(f"{k}: {v.get('description', v.get('type', ''))}" for k, v in props.items())
            lines.append(f"- {spec['name']}({args}): {spec['description']}")
        lines.append('Reply with JSON: {"tool": <tool name>, "arguments": {...}}.')
        return "\n".join(lines).strip()

    async def stream(  # type: ignore[override]
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        if not tool_specs or _has_tool_results(messages):
            answer = self._answer(messages, system_prompt) if self.bounded_answer else super().stream(
                _as_plain_text(messages), None, system_prompt, **kwargs)
            async for event in answer:
                yield event
            return
        response = await self._constrained(
            self.format_request_messages(_as_plain_text(messages), self._choice_prompt(tool_specs, system_prompt)),
            "tool_call", _tool_choice_schema(tool_specs, self.enums))
        yield {"messageStart": {"role": "assistant"}}
        _, content = _first_choice(response)
        try:
            call = json.loads(content)
            name, args = call["tool"], call["arguments"]
            if name not in {s["name"] for s in tool_specs}:
                raise KeyError(name)
        except (ValueError, KeyError, TypeError):
            # The grammar should make this impossible; if not, it is graded as plain text.
            for event in _text_block(content, "end_turn"):
                yield event
        else:
            tool_use_id = f"constrained-{uuid.uuid4().hex[:12]}"
            yield {"contentBlockStart": {"start": {"toolUse": {"name": name, "toolUseId": tool_use_id}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        if response.usage is not None:
            yield self.format_chunk({"chunk_type": "metadata", "data": response.usage})

    async def _constrained(self, messages: list[dict[str, Any]], name: str, schema: dict[str, Any]) -> Any:
        """One non-streamed request whose reply the server's grammar holds to ``schema``."""
        params = dict(self.config.get("params") or {})
        return await self._shared_client.chat.completions.create(
            model=self.config["model_id"],
            messages=messages,
            response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}},
            stream=False,
            **{k: v for k, v in params.items() if k not in ("stream", "stream_options")},
        )

    async def _answer(self, messages: Messages, system_prompt: str | None) -> AsyncGenerator[StreamEvent, None]:
        """A text answer, held to :data:`ANSWER_SCHEMA`; a reply cut at the token limit stays a failure."""
        response = await self._constrained(self.format_request_messages(_as_plain_text(messages), system_prompt),
                                           "answer", ANSWER_SCHEMA)
        choice, content = _first_choice(response)
        try:
            text = str(json.loads(content)["answer"])
        except (ValueError, KeyError, TypeError):
            text = content  # the grammar should make this impossible; then the raw reply is the answer
        stop = "max_tokens" if choice is not None and choice.finish_reason == "length" else "end_turn"
        yield {"messageStart": {"role": "assistant"}}
        for event in _text_block(text, stop):
            yield event
        if response.usage is not None:
            yield self.format_chunk({"chunk_type": "metadata", "data": response.usage})


def _first_choice(response: Any) -> tuple[Any, str]:
    """A non-streamed chat completion's first choice (or None) and its text ("" when it has none)."""
    choice = response.choices[0] if response.choices else None
    return choice, (choice.message.content if choice and choice.message else None) or ""


def _text_block(text: str, stop: str) -> list[StreamEvent]:
    """The stream events of one text content block and the message's stop."""
    return [{"contentBlockStart": {"start": {}}}, {"contentBlockDelta": {"delta": {"text": text}}},
            {"contentBlockStop": {}}, {"messageStop": {"stopReason": stop}}]
