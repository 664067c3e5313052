"""BFCL cases answered by a :class:`~.openai_fake.FakeOpenAI` policy, right or wrong.

It recognises each case by its user turn and offered tool names and answers through the OpenAI
``tool_calls`` field (streamed as vLLM streams them, or in one message), or with a constrained JSON
reply when the request carries ``response_format``. Modes:

* ``truth``: every relevant case gets its ground truth (the first allowed value of each argument
  that is not "may be omitted"), an irrelevance case a text reply;
* ``wrong``: every answer is deliberately wrong: a call with an argument the function does not
  have (even case numbers), the call written as text instead of made (odd case numbers), and a
  call on every irrelevance case.

Used by the tests and by ``benchmarks/bfcl_overhead.py`` (which serves it in a process of its own).
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from tests.agent.bench.fakes.openai_fake import Answer

from tests.agent.bench.fakes.openai_fake import ToolCall

from tests.agent.bench.fakes.openai_fake import send

from tests.agent.bench.fakes.openai_fake import words

from agent.bench.tasks.bfcl_cases import Case, sample_cases
from agent.bench.tasks.bfcl_tools import tool_name

IRRELEVANT_REPLY = "None of the offered functions can answer this request."


def _first(values: list[Any]) -> Any:
    """The first allowed value that is not "may be omitted" (""), or None; a dict's own values are
    lists of allowed values too (BFCL's answers for dict and list-of-dict arguments)."""
    chosen = next((v for v in values if v != ""), None)
    if isinstance(chosen, dict):
        return _pick(chosen, set(chosen))
    if isinstance(chosen, list) and chosen and all(isinstance(v, dict) for v in chosen):
        return [_pick(v, set(v)) for v in chosen]
    return chosen


def _pick(allowed: dict[str, list[Any]], known: set[str]) -> dict[str, Any]:
    """One value per argument; an argument the function does not document is left out (a few BFCL
    answers allow one), as is one that may only be omitted."""
    out = {}
    for key, values in allowed.items():
        chosen = _first(values) if key in known else None
        if chosen is not None:
            out[key] = chosen
    return out


def truth_calls(case: Case) -> list[tuple[str, dict[str, Any]]]:
    """The ground-truth calls of a case, as ``(tool name, arguments)``."""
    documented = {f["name"]: set(f["parameters"].get("properties", {})) for f in case.functions}
    return [(tool_name(name), _pick(allowed, documented[name]))
            for entry in case.ground_truth or [] for name, allowed in entry.items()]


def wrong_answer(case: Case) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """A deliberately wrong answer: ``(calls, text)``."""
    first = tool_name(case.functions[0]["name"])
    if case.category == "irrelevance":
        return [(first, {})], ""
    if case.index % 2 == 0:
        return [(first, {"argument_it_does_not_have": 1})], ""
    return [], f"I would call {first}(x=1) for this."


class BfclAnswers:
    """The :class:`~.openai_fake.FakeOpenAI` policy; ``mode`` is ``truth`` or ``wrong``."""

    def __init__(self, mode: str = "truth") -> None:
        if mode not in ("truth", "wrong"):
            raise ValueError(f"mode must be truth or wrong, got {mode!r}")
        self.mode = mode
        self.by_key = {(c.messages[-1]["content"], tuple(sorted(tool_name(f["name"]) for f in c.functions))): c
                       for c in sample_cases(None, 0)}  # fmt: skip

    def case_for(self, body: dict[str, Any]) -> Case:
        question = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        if body.get("tools"):
            names = [t["function"]["name"] for t in body["tools"]]
        else:  # constrained: the offered names are the schema's constants
            items = body["response_format"]["json_schema"]["schema"]["properties"]["calls"]["items"]
            names = [o["properties"]["name"]["const"] for o in items.get("anyOf", [items])]
        return self.by_key[question, tuple(sorted(names))]

    def calls_and_text(self, case: Case) -> tuple[list[tuple[str, dict[str, Any]]], str]:
        if self.mode == "wrong":
            return wrong_answer(case)
        if case.category == "irrelevance":
            return [], IRRELEVANT_REPLY
        return truth_calls(case), ""

    async def answer(self, request: web.Request, body: dict[str, Any], n: int) -> web.StreamResponse:
        calls, text = self.calls_and_text(self.case_for(body))
        usage = {"prompt_tokens": len(json.dumps(body)) // 4, "completion_tokens": 8 + 12 * len(calls),
                 "total_tokens": 0}  # fmt: skip
        if body.get("response_format"):
            text = json.dumps({"calls": [{"name": name, "arguments": args} for name, args in calls]})
            calls = []
        tool_calls = [ToolCall(f"call_{i}", name, json.dumps(args)) for i, (name, args) in enumerate(calls)]
        return await send(request, body, Answer(
            chunks=words(text), tool_calls=tool_calls, split_tool_calls=True, usage=usage,
            finish="tool_calls" if tool_calls else "stop", id="chatcmpl-bfcl", model=body.get("model"),
            headers={"x-request-id": "req-bfcl"}))
