"""A scripted OpenAI-compatible server on 127.0.0.1 that answers BFCL cases.

It recognises each case by its user turn and offered tool names and answers through the OpenAI
``tool_calls`` field (streamed in pieces, or in one message), or with a constrained JSON reply when
the request carries ``response_format``. Modes:

* ``truth``: every relevant case gets its ground truth (the first allowed value of each argument
  that is not "may be omitted"), an irrelevance case a text reply;
* ``wrong``: every answer is deliberately wrong: a call with an argument the function does not
  have (even case numbers), the call written as text instead of made (odd case numbers), and a
  call on every irrelevance case.

Used by the tests (:class:`RunningBfclServer`, in a thread) and by ``benchmarks/bfcl_overhead.py``
(:func:`serve_in_process`, in its own process).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from .loopback import LoopbackServer

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


class ScriptedBfclServer:
    """The request handler; ``mode`` is ``truth`` or ``wrong``."""

    def __init__(self, mode: str = "truth", cases: list[Case] | None = None) -> None:
        if mode not in ("truth", "wrong"):
            raise ValueError(f"mode must be truth or wrong, got {mode!r}")
        self.mode = mode
        self.by_key = {self.key(c.messages[-1]["content"], [tool_name(f["name"]) for f in c.functions]): c
                       for c in (cases if cases is not None else sample_cases(None, 0))}  # fmt: skip
        self.requests: list[dict[str, Any]] = []
        self.port = 0

    @staticmethod
    def key(question: str, names: list[str]) -> tuple[str, tuple[str, ...]]:
        return question, tuple(sorted(names))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def case_for(self, body: dict[str, Any]) -> Case:
        question = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        if body.get("tools"):
            names = [t["function"]["name"] for t in body["tools"]]
        else:  # constrained: the offered names are the schema's constants
            items = body["response_format"]["json_schema"]["schema"]["properties"]["calls"]["items"]
            names = [o["properties"]["name"]["const"] for o in items.get("anyOf", [items])]
        return self.by_key[self.key(question, names)]

    def answer(self, case: Case) -> tuple[list[tuple[str, dict[str, Any]]], str]:
        if self.mode == "wrong":
            return wrong_answer(case)
        if case.category == "irrelevance":
            return [], IRRELEVANT_REPLY
        return truth_calls(case), ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        calls, text = self.answer(self.case_for(body))
        usage = {"prompt_tokens": len(json.dumps(body)) // 4, "completion_tokens": 8 + 12 * len(calls),
                 "total_tokens": 0}  # fmt: skip
        if body.get("response_format"):
            text = json.dumps({"calls": [{"name": n, "arguments": a} for n, a in calls]})
            calls = []
        tool_calls = [{"index": i, "id": f"call_{i}", "type": "function",
                       "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(calls)]
        finish = "tool_calls" if tool_calls else "stop"
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if tool_calls:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in tool_calls]
            return web.json_response({"id": "chatcmpl-bfcl", "object": "chat.completion", "model": body.get("model"),
                                      "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                      "usage": usage})  # fmt: skip
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "x-request-id": "req-bfcl"})
        await resp.prepare(request)
        base = {"id": "chatcmpl-bfcl", "object": "chat.completion.chunk", "model": body.get("model")}
        events: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        for call in tool_calls:  # the name first, then the arguments in two pieces, as vLLM streams them
            args = call["function"]["arguments"]
            half = len(args) // 2
            events.append({"tool_calls": [{**call, "function": {"name": call["function"]["name"], "arguments": ""}}]})
            events.append({"tool_calls": [{"index": call["index"], "function": {"arguments": args[:half]}}]})
            events.append({"tool_calls": [{"index": call["index"], "function": {"arguments": args[half:]}}]})
        if text:  # one chunk per word
            events += [{"content": w if i == 0 else " " + w} for i, w in enumerate(text.split(" "))]
        out = b"".join(b"data: " + json.dumps({**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]})
                       .encode() + b"\n\n" for d in events)  # fmt: skip
        last = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        out += b"data: " + json.dumps(last).encode()
        out += b"\n\ndata: " + json.dumps({**base, "choices": [], "usage": usage}).encode() + b"\n\ndata: [DONE]\n\n"
        await resp.write(out)
        await resp.write_eof()
        return resp

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        return app


class RunningBfclServer(LoopbackServer):
    """A :class:`ScriptedBfclServer` served from its own thread and event loop."""

    def __init__(self, mode: str = "truth") -> None:
        self.server = ScriptedBfclServer(mode)
        super().__init__()

    def app(self) -> web.Application:
        return self.server.app()


def serve_in_process(port_queue: Any, mode: str = "truth") -> None:
    """Serve until killed, in this process; the port is put on ``port_queue`` (for benchmarks)."""
    server = ScriptedBfclServer(mode)

    async def main() -> None:
        runner = web.AppRunner(server.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port_queue.put(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        await asyncio.Event().wait()

    asyncio.run(main())
