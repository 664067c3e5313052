"""How vLLM lays out a model's KV cache in blocks, and what its start-up log counts
(``vllm/v1/core/kv_cache_utils.py``).

Each attention layer that holds its own KV (a layer sharing an earlier layer's, ``num_kv_shared_layers``, holds
none) keeps, per token, ``2 (K and V) x its KV heads on this GPU x head size x the KV dtype's bytes``; a GPU holds
``max(1, KV heads // tensor parallel)`` heads (vLLM replicates a head over GPUs where there are more GPUs than
heads). Memory is allocated in blocks of 16 tokens (``CacheConfig.DEFAULT_BLOCK_SIZE``).

- **One kind of layer** (every layer full attention, or every layer sliding with one window): blocks are
  ``available // (page x layers)`` and "GPU KV cache size" is blocks x 16.
- **Full and sliding layers** (vLLM 0.10 and later, its hybrid allocator): pages are made equal (a smaller page's
  layers get a larger block), layers are split into groups of one kind and equal size (the fewer kind's count, or
  the larger where it is under 1.5 times the smaller: ``_get_kv_cache_groups_uniform_page_size``; padding fills the
  last group of a kind), blocks are ``available // (page x group size)`` and the log's tokens are
  ``blocks // groups x 16``: the tokens as if every layer were full attention. A sequence of ``max_model_len``
  tokens takes, in a sliding group, ``cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), block) + 1``
  blocks (``SlidingWindowSpec.max_memory_usage_bytes``), in a full group ``cdiv(max_model_len, block)``; the
  maximum concurrency the log prints is blocks over their sum (``get_max_concurrency_for_kv_cache_config``), and
  from vLLM 0.20 "GPU KV cache size" is that concurrency x ``max_model_len`` (:data:`CONCURRENCY_TOKENS_SINCE`).
- Before vLLM 0.10 a model with both kinds has every layer sized as full attention.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigs.catalog.served import DTYPE_BYTES, Architecture

BLOCK = 16
HYBRID_SINCE = (0, 10)
CONCURRENCY_TOKENS_SINCE = (0, 20)
"""From here "GPU KV cache size" is the maximum concurrency x ``max_model_len`` (vllm-project/vllm#40691: 0.19 still
divides the blocks over the groups; 0.30's logs print the product, not a multiple of the block)."""
IN_FLIGHT_SINCE = (0, 30)
"""From here a sliding layer keeps its window and the tokens in flight, twice ``max_num_batched_tokens`` (a step
scheduled while the last one runs: ``vllm_config.max_in_flight_tokens`` in ``SlidingWindowSpec``); 0.30's logs
agree (Gemma 4 E2B and E4B: 145 blocks of 32 a sliding group at 2,048 batched tokens); 0.20 to 0.29 not checked."""


def in_flight(batched: int, engine: tuple[int, int]) -> int:
    """The tokens a sliding layer keeps beside its window under vLLM ``engine``."""
    return 2 * batched if engine >= IN_FLIGHT_SINCE else batched
KV_DTYPES = ("auto", "fp8")


def kv_dtype_bytes(arch: Architecture, kv_cache_dtype: str, dtype: str | None = None) -> int:
    """Bytes of one KV element: ``fp8`` one, ``auto`` the model's (or ``dtype``'s) own."""
    return 1 if kv_cache_dtype.startswith("fp8") else DTYPE_BYTES[dtype or arch.dtype]


@dataclass(frozen=True, slots=True)
class Group:
    kind: str
    block: int
    """Tokens a block of this group holds."""


@dataclass(frozen=True, slots=True)
class Layout:
    """One GPU's KV cache layout: ``group_size`` tensors of ``page`` bytes a block, shared by the groups."""

    page: int
    group_size: int
    groups: tuple[Group, ...]
    window: int

    @property
    def bytes_per_token(self) -> float:
        """Bytes of this GPU one token of the log's "GPU KV cache size" takes."""
        return len(self.groups) * self.group_size * self.page / BLOCK

    def blocks(self, available: int) -> int:
        return max(0, available) // (self.page * self.group_size)

    def tokens(self, available: int, context: int, batched: int, engine: tuple[int, int]) -> int:
        """"GPU KV cache size: N tokens" for ``available`` bytes of KV cache memory, as vLLM ``engine`` prints it."""
        if engine >= CONCURRENCY_TOKENS_SINCE:
            return int(self.sequences(available, context, batched) * context)
        return self.blocks(available) // len(self.groups) * BLOCK

    def blocks_per_sequence(self, context: int, batched: int) -> int:
        """Blocks one sequence of ``context`` tokens may hold (``batched``: the tokens in flight, :func:`in_flight`)."""
        total = 0
        for group in self.groups:
            if group.kind == "sliding":
                total += -(-min(self.window - 1 + batched, context) // group.block) + 1
            else:
                total += -(-context // group.block)
        return total

    def sequences(self, available: int, context: int, batched: int) -> float:
        """vLLM's "Maximum concurrency for ``context`` tokens per request"."""
        return self.blocks(available) / self.blocks_per_sequence(context, batched)

    def bytes_per_sequence(self, context: int, batched: int) -> int:
        """This GPU's bytes for one sequence of ``context`` tokens."""
        return self.blocks_per_sequence(context, batched) * self.page * self.group_size


def layout(arch: Architecture, tensor_parallel: int, element_bytes: int, engine: tuple[int, int]) -> Layout:
    """``arch``'s KV layout on one of ``tensor_parallel`` GPUs, ``element_bytes`` an element, under vLLM ``engine``."""
    counts: dict[str, int] = {}
    pages: dict[str, int] = {}
    for kind in arch.layer_kinds()[:arch.layers - arch.kv_shared_layers]:
        geometry = arch.geometry(kind)
        heads = max(1, geometry.kv_heads // tensor_parallel)
        counts[kind] = counts.get(kind, 0) + 1
        pages[kind] = BLOCK * 2 * heads * geometry.head_dim * element_bytes
    window = arch.sliding_window or 0
    if len(counts) == 1 and len(set(pages.values())) == 1:
        kind = next(iter(counts))
        return Layout(pages[kind], counts[kind], (Group(kind, BLOCK),), window)
    if engine < HYBRID_SINCE or any(max(pages.values()) % p for p in pages.values()):
        total = sum(pages[k] * n for k, n in counts.items())
        return Layout(total, 1, (Group("full", BLOCK),), window)
    page = max(pages.values())
    size = min(counts.values())
    if max(counts.values()) < 1.5 * size:
        size = max(counts.values())
    groups = tuple(Group(kind, BLOCK * page // pages[kind]) for kind, n in counts.items()
                   for _ in range(-(-n // size)))
    return Layout(page, size, groups, window)
