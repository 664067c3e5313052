"""A model's :class:`Architecture` from its Hugging Face ``config.json``: for a model the catalog does not list.

Read from a local file only (``-c model_config.<rig>=PATH``, ``python -m rigs fit --model-config FILE``): synth stays
offline. A multimodal config's ``text_config`` is the language model's. The parameter count is estimated from the
config's sizes (embeddings, attention, the MLP or every expert; norms and biases left out), since a config.json
publishes none; a quantized checkpoint's bytes from its ``quantization_config`` bits where it names them.
"""

from __future__ import annotations

import json
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
    return ("sliding",) if sliding else ("full",)


def _dtype(data: Mapping[str, Any], text: Mapping[str, Any]) -> str:
    for where in (text, data):
        value = str(where.get("torch_dtype") or where.get("dtype") or "")
        if value in DTYPE_BYTES:
            return value
    return "bfloat16"


def parameters(text: Mapping[str, Any], source: str) -> tuple[int, int]:
    """(all parameters, those of the embeddings and output head), estimated from the config's sizes."""
    hidden, layers, vocab = (_int(text, k, source) for k in ("hidden_size", "num_hidden_layers", "vocab_size"))
    heads = _int(text, "num_attention_heads", source)
    kv = text.get("num_key_value_heads") or heads
    head_dim = text.get("head_dim") or hidden // heads
    attention = hidden * head_dim * (2 * heads + 2 * kv)
    experts = text.get("num_local_experts") or text.get("num_experts") or text.get("n_routed_experts") or 0
    width = text.get("moe_intermediate_size") if experts and text.get("moe_intermediate_size") else \
        _int(text, "intermediate_size", source)
    mlp = 3 * hidden * width * max(1, experts) + hidden * experts
    embeddings = vocab * hidden * (1 if text.get("tie_word_embeddings", False) else 2)
    return embeddings + layers * (attention + mlp), embeddings


def _bits(quantization: Mapping[str, Any]) -> float | None:
    """The weights' bits a ``quantization_config`` names (None where it names none sizing reads)."""
    if str(quantization.get("quant_method", "")).lower() == "mxfp4":
        return MXFP4_BITS
    if isinstance(quantization.get("bits"), int):
        return float(quantization["bits"])
    for group in (quantization.get("config_groups") or {}).values():
        weights = group.get("weights") if isinstance(group, dict) else None
        if isinstance(weights, dict) and isinstance(weights.get("num_bits"), int):
            return float(weights["num_bits"])
    return None


def architecture(data: Mapping[str, Any], source: str) -> Architecture:
    """The architecture of the ``config.json`` ``data`` (read from ``source``, named in errors)."""
    text = data.get("text_config") if isinstance(data.get("text_config"), dict) else data
    heads = _int(text, "num_attention_heads", source)
    kv_heads = text.get("num_key_value_heads") or heads
    head_dim = text.get("head_dim") or _int(text, "hidden_size", source) // heads
    dtype = _dtype(data, text)
    count, embeddings = parameters(text, source)
    quantization = data.get("quantization_config") or text.get("quantization_config") or {}
    fields: dict[str, Any] = {
        "layers": _int(text, "num_hidden_layers", source), "attention_heads": heads, "kv_heads": kv_heads,
        "head_dim": head_dim, "layer_pattern": _pattern(text, source), "max_context": _int(
            text, "max_position_embeddings", source), "dtype": dtype, "parameters": count,
        "kv_shared_layers": text.get("num_kv_shared_layers") or 0,
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
        bits = _bits(quantization)
        fields["quantization"] = method + (f" ({bits:g}-bit weights)" if bits else "")
        if bits:
            fields["weight_bytes"] = round(embeddings * DTYPE_BYTES[dtype] + (count - embeddings) * bits / 8)
            fields["weight_basis"] += f"; the layers' weights at {bits:g} bits, the embeddings at {dtype}"
    try:
        return Architecture.model_validate(fields)
    except ValidationError as exc:
        raise ConfigError(f"{source}: " + "; ".join(f"{p.path('config')}: {p.message}"
                                                    for p in problems(exc, Architecture))) from None
