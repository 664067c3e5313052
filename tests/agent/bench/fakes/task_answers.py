"""BFCL multi-turn tasks answered by a :class:`~.openai_fake.FakeOpenAI` policy: a planted set of tasks with their
ground-truth calls, every other one wrongly.

It recognises the task by its first user turn and the turn by the user turns so far. A planted task gets, on each
turn, the turn's ground-truth calls in one reply (as OpenAI ``tool_calls``, positional arguments named from the API
method's signature), then a short text once their results are back; any other task gets a text and no call, which
BFCL's checker fails ("empty turn model response").
"""

from __future__ import annotations

import ast
import inspect
import json
from typing import Any, Collection

from aiohttp import web

from tests.agent.bench.fakes.openai_fake import Answer, ToolCall, send, words

from agent.bench.tasks.multi_turn import Environment, Task, load_tasks

DONE = "Done."
REFUSAL = "I cannot help with that."


def truth_calls(task: Task, turn: int) -> list[tuple[str, dict[str, Any]]]:
    """The ground-truth calls of one turn as ``(name, keyword arguments)``."""
    methods = Environment(task).methods
    out = []
    for text in task.ground_truth[turn]:
        call = ast.parse(text, mode="eval").body
        assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
        names = list(inspect.signature(methods[call.func.id]).parameters)
        args = {names[i]: ast.literal_eval(a) for i, a in enumerate(call.args)}
        args.update({k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg})
        out.append((call.func.id, args))
    return out


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


class TaskAnswers:
    """The policy: ``right`` names the tasks answered with their ground truth."""

    def __init__(self, category: str, right: Collection[str]) -> None:
        self.tasks = {t.turns[0]: t for t in load_tasks(category)}
        self.right = set(right)

    def reply(self, body: dict[str, Any], n: int) -> Answer:
        messages = body.get("messages") or []
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        task = self.tasks[_text(messages[users[0]]["content"])]
        turn = len(users) - 1
        answered = any(m.get("role") == "assistant" and m.get("tool_calls") for m in messages[users[-1]:])
        usage = {"prompt_tokens": 100 * len(messages), "completion_tokens": 10, "total_tokens": 100 * len(messages) + 10}
        if task.id in self.right and not answered and task.ground_truth[turn]:
            calls = [ToolCall(f"call_{n}_{i}", name, json.dumps(args))
                     for i, (name, args) in enumerate(truth_calls(task, turn))]
            return Answer(tool_calls=calls, finish="tool_calls", usage=usage)
        return Answer(chunks=words(DONE if task.id in self.right else REFUSAL), usage=usage)

    async def answer(self, request: web.Request, body: dict[str, Any], n: int) -> web.StreamResponse:
        return await send(request, body, self.reply(body, n))
