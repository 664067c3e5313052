"""The workload presets (``--workload preset=NAME``): lengths other benchmarks publish, each with its source.

Lengths are tokens as the server counts them (``usage.prompt_tokens`` and ``usage.completion_tokens``);
a key given beside a preset replaces the preset's value (``preset=chat,output_tokens_mean=128``). The table
in docs/traffic.md ("The presets") lists them with their sources.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..reference import CHAT_MAX_TOKENS


@dataclass(frozen=True, slots=True)
class Preset:
    """One preset: its lengths (mean and standard deviation, tokens) and where they come from."""

    name: str
    prompt_input_tokens_mean: float
    prompt_input_tokens_stddev: float
    output_tokens_mean: float
    output_tokens_stddev: float
    source: str
    shared_prefix_tokens: int = 0
    turns: int = 1

    def keys(self) -> dict[str, float | int]:
        """The workload keys it sets."""
        out: dict[str, float | int] = {
            "prompt_input_tokens_mean": self.prompt_input_tokens_mean,
            "prompt_input_tokens_stddev": self.prompt_input_tokens_stddev,
            "output_tokens_mean": self.output_tokens_mean, "output_tokens_stddev": self.output_tokens_stddev}
        if self.shared_prefix_tokens:
            out["shared_prefix_tokens"] = self.shared_prefix_tokens
        if self.turns > 1:
            out["turns"] = self.turns
        return out


REFERENCE = "reference"
REFERENCE_PROMPT_TOKENS = 20
"""The reference prompt's length as a server counts it, stated before any server is asked: its 9 words and
full stop, and about 10 tokens of a chat template (Gemma's turn markers). Each server's own count is in the
report ("Your traffic"); the local rig's template adds a system turn of its own and counts 38."""

_GUIDELLM = "https://github.com/vllm-project/guidellm/blob/1b65bbf3fb57efd9aa0c6d1b947b3e02623ecfad/src/guidellm/benchmark/scenarios"
_LLM_D = "https://github.com/llm-d/llm-d-benchmark/blob/8bc9f1ddd873a24f1657d6cca2e0d0fb6947dd36/workload/profiles/inference-perf"
_INFERENCE_PERF = ("https://github.com/kubernetes-sigs/inference-perf/blob/7de5ef2ed6f7934e0ecbc8297e593f79e68430c0/docs/"
                   "conversation_replay.md")

PRESETS: Mapping[str, Preset] = {p.name: p for p in (
    Preset(REFERENCE, REFERENCE_PROMPT_TOKENS, 0, CHAT_MAX_TOKENS, 0,
           "the reference's chat bench (docs/reference-run.md): one fixed prompt, 100 output tokens"),
    Preset("chat", 512, 128, 256, 64, f"GuideLLM's chat scenario, {_GUIDELLM}/chat.json"),
    Preset("rag", 4096, 512, 512, 128, f"GuideLLM's rag scenario, {_GUIDELLM}/rag.json"),
    Preset("summarization", 2048, 1024, 256, 128,
           f"llm-d-benchmark's summarization profile, {_LLM_D}/summarization_synthetic.yaml.in"),
    Preset("code", 2048, 1024, 128, 64,
           f"llm-d-benchmark's code completion profile, {_LLM_D}/code_completion_synthetic.yaml.in"),
    Preset("agentic", 1652, 3000, 585, 400,
           f"inference-perf's conversation replay (its quick start: a shared system prompt, 38 turns), {_INFERENCE_PERF}",
           shared_prefix_tokens=8359, turns=38),
)}
"""Every preset by name."""
