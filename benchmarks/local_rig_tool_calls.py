"""How often SmolLM2 on the local rig writes a tool call that llama.cpp parses, with a tool-call template.

Run: .venv/bin/python benchmarks/local_rig_tool_calls.py

Starts the local rig with ``tests/agent/data/tool_call_template.jinja`` (ChatML with
``<tool_call>`` tags, so llama.cpp parses calls into ``tool_calls``), one thread, one slot, and
sends four prompts that offer one tool, greedily and without prompt caching (repeatable), first
with ``tool_choice: "auto"`` (60 tokens), then ``"required"`` (200 tokens). It prints, per
request, whether a call came back parsed. This is why the local rig uses the constrained tool
mode rather than the model's own calls (docs/agent.md).
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from agent.local_rig import MODEL_ID, LocalRigConfig, local_rig_process  # noqa: E402

TEMPLATE = PROJECT_DIR / "tests" / "agent" / "data" / "tool_call_template.jinja"
TOOL = {"type": "function", "function": {
    "name": "count_ids", "description": "Count ids.",
    "parameters": {"type": "object", "properties": {"op": {"type": "string", "enum": [">", "<"]},
                                                    "value": {"type": "integer"}},
                   "required": ["op", "value"]}}}
PROMPTS = ("How many ids are above 9? Use the tool.", "How many ids are above 9?",
           "Count the ids above 9 with count_ids.", "Use count_ids to count ids above 9.")


def main() -> int:
    config = LocalRigConfig(threads=1, parallel=1, context=2048, chat_template_file=TEMPLATE)
    with local_rig_process(config) as rig:
        print(f"server: llama.cpp {rig.install.version}; template {TEMPLATE.name}")
        for tool_choice, max_tokens in (("auto", 60), ("required", 200)):
            parsed = 0
            for prompt in PROMPTS:
                body = {"model": MODEL_ID, "messages": [{"role": "user", "content": prompt}], "tools": [TOOL],
                        "tool_choice": tool_choice, "max_tokens": max_tokens, "temperature": 0,
                        "cache_prompt": False}
                request = urllib.request.Request(f"{rig.base_url}/chat/completions", data=json.dumps(body).encode(),
                                                 headers={"Content-Type": "application/json"}, method="POST")
                with urllib.request.urlopen(request, timeout=600) as response:
                    reply = json.loads(response.read())
                choice = reply["choices"][0]
                calls = choice["message"].get("tool_calls") or []
                parsed += bool(calls)
                print(f"tool_choice={tool_choice:8s} {'call parsed' if calls else 'no call    '} "
                      f"finish={choice['finish_reason']:10s} "
                      f"tokens={reply['usage']['completion_tokens']:3d}  {prompt!r}")
            print(f"tool_choice={tool_choice}: {parsed} of {len(PROMPTS)} prompts gave a parsed call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
