"""A model's :class:`Architecture` from its Hugging Face ``config.json``: for a model the catalog does not list.

Read from a local file only (``-c model_config.<rig>=PATH``, ``python -m rigs fit --model-config FILE``): synth stays
offline. A multimodal config's ``text_config`` is the language model's; its vision and audio towers
(``vision_config``, ``audio_config``) are counted where the checkpoint holds them (a class that is not
``...ForCausalLM``). The parameter count is estimated from the config's sizes (embeddings, attention, the MLP or every
expert; norms and biases left out), since a config.json publishes none. A field the file leaves out is what
transformers' config class for its ``model_type`` defaults it to: Gemma's tie the output head to the embeddings,
Gemma 2 alternates sliding and full layers, Gemma 3 has five sliding layers to one full (``sliding_window_pattern``).
A quantized checkpoint's bytes follow its ``quantization_config`` as vLLM loads it (:func:`bits`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from pydantic import ValidationError

from kit.command import UsageError
from rigs.catalog.checks import problems
from rigs.catalog.served import DTYPE_BYTES, Architecture

LAYER_KINDS = {"full_attention": "full", "sliding_attention": "sliding"}
"""``layer_types`` entries sizing knows, and their kind."""
MXFP4_BITS = 4.25
"""MXFP4: 4-bit values and one 8-bit scale per 32 (OCP Microscaling Formats spec v1.0)."""
MXFP4_ALIGNMENT = 256
"""vLLM holds MXFP4 experts with their hidden and intermediate sizes rounded up to a multiple of this
(``vllm/model_executor/layers/quantization/mxfp4.py``): gpt-oss's 2,880 as 3,072, which its logs show (gpt-oss-20b
14.0 GiB on two H100s, gpt-oss-120b 68.9 GiB on four A100s, 9.5% and 13% over the checkpoints)."""
NVFP4_BITS = 4.5
"""NVFP4: 4-bit values and one FP8 scale per 16 (NVIDIA ModelOpt)."""
TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma3n_text", "gemma4", "gemma4_text")
"""``model_type``s whose transformers config class ties the output head to the embeddings when
``tie_word_embeddings`` is absent (``GemmaConfig`` and its successors); the rest default to untied."""
UNGATED_MLP = ("phi", "gpt2", "gpt_neox", "gptj", "gpt_bigcode", "falcon", "starcoder2", "opt", "bloom", "mpt")
"""``model_type``s whose MLP is two matrices (up and down), not three (gate, up and down)."""
SLIDING_PATTERNS = {"gemma2": 2, "gemma3": 6, "gemma3_text": 6, "cohere2": 4}
"""``model_type`` -> every n-th layer full, the others sliding, where ``layer_types`` is absent (transformers:
Gemma 2's ``layer_idx % 2``, Gemma 3's and Cohere 2's ``sliding_window_pattern``)."""


class ConfigError(UsageError):
    """A ``config.json`` sizing cannot read: one line naming the file, the problem and the fix."""


def read_config(path: Path) -> Architecture:
    """The architecture in the ``config.json`` at ``path``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc}); give the model's config.json") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not JSON ({exc}); give the model's config.json") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a JSON object; give the model's config.json")
    return architecture(data, str(path))


def _int(text: Mapping[str, Any], key: str, source: str) -> int:
    value = text.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{source}: {key} is {value!r}; a config.json of a transformer gives it as a whole number")
    return value


def _pattern(text: Mapping[str, Any], source: str) -> tuple[str, ...]:
    kinds = text.get("layer_types")
    if isinstance(kinds, list) and kinds:
        unknown = sorted({str(k) for k in kinds if k not in LAYER_KINDS})
        if unknown:
            raise ConfigError(f"{source}: layer_types {', '.join(unknown)}: sizing knows full_attention and "
                              "sliding_attention layers only")
        return tuple(LAYER_KINDS[k] for k in kinds)
    sliding = text.get("sliding_window") and text.get("use_sliding_window", True) is not False
    if not sliding:
        return ("full",)
    every = text.get("sliding_window_pattern") or SLIDING_PATTERNS.get(str(text.get("model_type")))
    return ("sliding",) * (every - 1) + ("full",) if isinstance(every, int) and every > 1 else ("sliding",)


def tied(text: Mapping[str, Any], data: Mapping[str, Any]) -> bool:
    """Whether the output head is the embeddings (``tie_word_embeddings``, else its ``model_type``'s default)."""
    for where in (text, data):
        if isinstance(where.get("tie_word_embeddings"), bool):
            return where["tie_word_embeddings"]
    return str(text.get("model_type") or data.get("model_type")) in TIED_BY_DEFAULT


def _dtype(data: Mapping[str, Any], text: Mapping[str, Any]) -> str:
    """The dtype vLLM's ``--dtype auto`` serves the checkpoint in: its own, but a float32 checkpoint in bfloat16
    (``vllm/config/model.py``, ``_get_and_verify_dtype``: float32 is served at half precision unless asked)."""
    for where in (text, data):
        value = str(where.get("torch_dtype") or where.get("dtype") or "")
        if value in DTYPE_BYTES:
            return "bfloat16" if value == "float32" else value
    return "bfloat16"


@dataclass(frozen=True, slots=True)
class Parts:
    """A checkpoint's parameters by what a quantization leaves alone or packs."""

    embeddings: int
    """The embeddings and output head (never quantized by the formats sizing reads)."""
    attention: int
    experts: int
    """The MLPs, or every expert of a mixture of experts (their router with them)."""
    towers: int
    """Vision and audio encoders (kept at the checkpoint's dtype)."""

    @property
    def total(self) -> int:
        return self.embeddings + self.attention + self.experts + self.towers


def _tower(config: Any) -> int:
    """An encoder's parameters from its sizes (layers x attention and MLP), 0 where its config gives none."""
    if not isinstance(config, dict):
        return 0
    hidden, layers = config.get("hidden_size"), config.get("num_hidden_layers")
    if not isinstance(hidden, int) or not isinstance(layers, int):
        return 0
    width = config.get("intermediate_size") or 4 * hidden
    return layers * (4 * hidden * hidden + 2 * hidden * width)


def parts(data: Mapping[str, Any], text: Mapping[str, Any], source: str) -> Parts:
    """The parameters, estimated from the config's sizes."""
    hidden, layers, vocab = (_int(text, k, source) for k in ("hidden_size", "num_hidden_layers", "vocab_size"))
    heads = _int(text, "num_attention_heads", source)
    kv = text.get("num_key_value_heads") or heads
    head_dim = text.get("head_dim") or hidden // heads
    experts = text.get("num_local_experts") or text.get("num_experts") or text.get("n_routed_experts") or 0
    width = text.get("moe_intermediate_size") if experts and text.get("moe_intermediate_size") else \
        _int(text, "intermediate_size", source)
    matrices = 2 if str(text.get("model_type") or data.get("model_type")) in UNGATED_MLP else 3
    shared = text.get("shared_expert_intermediate_size") or \
        (text.get("n_shared_experts") or 0) * (text.get("moe_intermediate_size") or 0) or \
        (width if experts and text.get("model_type") == "llama4_text" else 0)  # Llama 4: one shared expert
    classes = data.get("architectures") or []
    multimodal = bool(classes) and not str(classes[0]).endswith("ForCausalLM")
    towers = sum(_tower(data.get(k)) for k in ("vision_config", "audio_config")) if multimodal else 0
    per_layer = text.get("hidden_size_per_layer_input") or 0  # Gemma 3n and 4: an embedding per layer too
    per_layer_vocab = text.get("vocab_size_per_layer_input") or vocab
    wide = (text.get("num_kv_shared_layers") or 0) if text.get("use_double_wide_mlp") else 0  # Gemma 4 E2B/E4B
    return Parts(embeddings=vocab * hidden * (1 if tied(text, data) else 2) + layers * per_layer * per_layer_vocab,
                 attention=layers * hidden * head_dim * (2 * heads + 2 * kv),
                 experts=(layers + wide) * (matrices * hidden * (width * max(1, experts) + shared) + hidden * experts),
                 towers=towers)


def parameters(text: Mapping[str, Any], source: str) -> tuple[int, int]:
    """(all parameters, those of the embeddings and output head) of a language model's config."""
    found = parts(text, text, source)
    return found.total, found.embeddings


def bits(quantization: Mapping[str, Any]) -> float | None:
    """The bits a quantized weight takes as vLLM loads it, scales included, from a ``quantization_config``; None
    where it names none sizing reads.

    FP8 (``quant_method: fp8``, per-tensor or ``weight_block_size`` blocks, whose scales are a few bytes per 16,384
    weights; ``fbgemm_fp8``) 8; MXFP4 4.25; ModelOpt ``FP8`` 8 and ``NVFP4`` 4.5; GPTQ and AWQ ``bits`` plus a
    16-bit scale and a packed zero point per ``group_size`` weights; compressed-tensors the ``num_bits`` of its
    weights' group, plus the group's scale where it is grouped."""
    method = str(quantization.get("quant_method", "")).lower()
    if method == "mxfp4":
        return MXFP4_BITS
    if method in ("fp8", "fbgemm_fp8"):
        return 8.0
    nested = quantization.get("quantization")
    algorithm = str(quantization.get("quant_algo") or (nested.get("quant_algo") if isinstance(nested, dict) else "")
                    or "").upper()
    if method == "modelopt" or algorithm:
        return {"FP8": 8.0, "NVFP4": NVFP4_BITS}.get(algorithm)
    width = quantization.get("bits") or quantization.get("w_bit")  # AutoAWQ's older files say w_bit, q_group_size
    if isinstance(width, int):
        group = quantization.get("group_size") or quantization.get("q_group_size")
        return width + ((16 + width) / group if isinstance(group, int) and group > 0 else 0)
    for entry in (quantization.get("config_groups") or {}).values():
        weights = entry.get("weights") if isinstance(entry, dict) else None
        if isinstance(weights, dict) and isinstance(weights.get("num_bits"), int):
            group = weights.get("group_size")
            return weights["num_bits"] + (16 / group if isinstance(group, int) and group > 0 else 0)
    return None


def _padded(size: int) -> int:
    return -(-size // MXFP4_ALIGNMENT) * MXFP4_ALIGNMENT


def _weights(found: Parts, quantization: Mapping[str, Any], dtype: str,
             text: Mapping[str, Any]) -> tuple[int, str] | None:
    """The bytes of a quantized checkpoint's weights as vLLM holds them, and how they were counted; None where its
    bits are unknown."""
    quantized_bits = bits(quantization)
    if quantized_bits is None:
        return None
    size = DTYPE_BYTES[dtype]
    experts_only = str(quantization.get("quant_method", "")).lower() == "mxfp4"
    if experts_only:
        hidden, width = text["hidden_size"], text.get("intermediate_size") or text["hidden_size"]
        quantized_bits *= _padded(hidden) * _padded(width) / (hidden * width)
    targets = " ".join(str(t) for g in (quantization.get("config_groups") or {}).values() if isinstance(g, dict)
                       for t in g.get("targets") or ())
    embedded = "embed" in targets  # a compressed-tensors group that packs the embeddings too
    packed = found.experts + (0 if experts_only else found.attention) + (found.embeddings if embedded else 0)
    kept = found.towers + (found.attention if experts_only else 0) + (0 if embedded else found.embeddings)
    which = "the experts'" if experts_only else "the layers'"
    return (round(kept * size + packed * quantized_bits / 8),
            f"{which} weights at {quantized_bits:g} bits, the rest at {dtype}")


def architecture(data: Mapping[str, Any], source: str) -> Architecture:
    """The architecture of the ``config.json`` ``data`` (read from ``source``, named in errors)."""
    text = data.get("text_config") if isinstance(data.get("text_config"), dict) else data
    heads = _int(text, "num_attention_heads", source)
    kv_heads = text.get("num_key_value_heads") or heads
    head_dim = text.get("head_dim") or _int(text, "hidden_size", source) // heads
    dtype = _dtype(data, text)
    found = parts(data, text, source)
    count = found.total
    quantization = data.get("quantization_config") or text.get("quantization_config") or {}
    fields: dict[str, Any] = {
        "layers": _int(text, "num_hidden_layers", source), "attention_heads": heads, "kv_heads": kv_heads,
        "head_dim": head_dim, "layer_pattern": _pattern(text, source), "max_context": _int(
            text, "max_position_embeddings", source), "dtype": dtype, "parameters": count,
        "kv_shared_layers": text.get("num_kv_shared_layers") or 0, "vocab": text.get("vocab_size"),
        "hidden": text.get("hidden_size"), "intermediate": text.get("moe_intermediate_size")
        or text.get("intermediate_size"),
        "weight_basis": f"{count:,} parameters estimated from {source}'s sizes (norms and biases left out)"}
    classes = data.get("architectures")
    if isinstance(classes, list) and classes and isinstance(classes[0], str):
        fields["model_class"] = classes[0]
    if text.get("sliding_window") and "sliding" in fields["layer_pattern"]:
        fields["sliding_window"] = text["sliding_window"]
    if text.get("global_head_dim") or text.get("num_global_key_value_heads"):
        fields["full_attention"] = {"kv_heads": text.get("num_global_key_value_heads") or kv_heads,
                                    "head_dim": text.get("global_head_dim") or head_dim}
    experts = text.get("num_local_experts") or text.get("num_experts")
    if experts:
        fields["experts"] = experts
        fields["experts_per_token"] = text.get("experts_per_token") or text.get("num_experts_per_tok")
    if quantization:
        method = str(quantization.get("quant_method") or "quantized")
        counted = _weights(found, quantization, dtype, text)
        fields["quantization"] = method + (f" ({bits(quantization):g}-bit weights)" if counted else "")
        if counted:
            fields["weight_bytes"], how = counted
            fields["weight_basis"] += f"; {how}"
    try:
        return Architecture.model_validate(fields)
    except ValidationError as exc:
        raise ConfigError(f"{source}: " + "; ".join(f"{p.path('config')}: {p.message}"
                                                    for p in problems(exc, Architecture))) from None
