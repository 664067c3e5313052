"""The chat section: p50 / p90 / p99 of the timed requests at concurrency 1, how the decode rate was
measured, the cold request, the aggregate rate per level, resends and errors."""

from __future__ import annotations

from typing import Mapping

from ...results.blocks.chat import ChatSummary, Distribution
from ...results.formatting import MISSING, cell, percent
from ...results.summary import Summary
from ..labels import backend_label, not_run
from ..markdown import table

NOTE = ("p50 / p90 / p99; n = timed requests at concurrency 1 (the cold request is apart). Failed requests are "
        "counted under errors and left out of every figure.")


def _pcts(dist: Distribution | None, digits: int = 1) -> str:
    if not dist or not dist.n:
        return MISSING
    return f"{cell(dist.p50, digits)} / {cell(dist.p90, digits)} / {cell(dist.p99, digits)}"


def decode_basis(c: ChatSummary) -> str:
    basis = c.decode_basis
    if not basis:
        return "not measured (no streamed reply with a decode interval and a usage count)"
    multi = basis.get("multi_token", 0)
    if c.decode_comparable:
        left_out = f"; {multi} repl{'y' if multi == 1 else 'ies'} that came in multi-token chunks left out" if multi else ""
        return f"from {basis['per_token']} replies in per-token chunks: comparable{left_out}"
    return (f"from {multi} replies in multi-token chunks: the first arrival's tokens are left out of each rate, "
            "but arrival times follow the server's or relay's buffering, so these figures are not comparable with "
            "per-token streams and stay out of the bandwidth-ceiling share")


def _requested_returned(c: ChatSummary) -> str:
    d = c.output_tokens
    if not d.n:
        return f"{c.requested_tokens} / -"
    short = f", {c.returned_short} short" if c.returned_short else ""
    return f"{c.requested_tokens} / {cell(d.p50, 0)} ({cell(d.min, 0)}-{cell(d.max, 0)}{short})"


def _tables(summary: Summary, blocks: Mapping[str, ChatSummary]) -> list[str]:
    name = {n: backend_label(summary, n) for n in blocks}
    rows = [[name[n], c.requests, c.errors, "yes" if c.streamed else "no", _pcts(c.ttft_ms), _pcts(c.itl_ms, 2),
             _pcts(c.e2e_ms, 0), _pcts(c.decode_tok_per_s), _pcts(c.client_tok_per_s), _requested_returned(c),
             c.usage_missing] for n, c in blocks.items()]
    out = table(["backend", "n", "errors", "streamed", "TTFT ms", "chunk gap ms (pooled)", "e2e ms", "decode tok/s",
                 "client tok/s", "tokens requested / returned", "usage missing"], rows)
    out += [""] + [f"- {name[n]}: decode tok/s {decode_basis(c)}" for n, c in blocks.items()]
    out += ["", "Cold (first) request:", ""]
    out += table(["backend", "TTFT ms", "e2e ms", "output tokens", "error"],
                 [[name[n], cell(c.cold.ttft_ms), cell(c.cold.e2e_ms, 0), cell(c.cold.output_tokens),
                   c.cold.error or MISSING] for n, c in blocks.items() if c.cold])
    out += ["", "Aggregate output rate per concurrency level (successful requests only):", ""]
    out += table(["backend", "concurrency", "requests", "errors", "resends", "wall s", "output tok/s", "requests/s"],
                 [[name[n], lv.concurrency, lv.requests, lv.errors, lv.resends, cell(lv.wall_s, 2),
                   cell(lv.output_tok_per_s), cell(lv.requests_per_s, 2)] for n, c in blocks.items() for lv in c.levels])
    return out


def _sessions(summary: Summary, blocks: Mapping[str, ChatSummary]) -> list[str]:
    """Per-turn TTFT as the context grows, and the prompt tokens the servers read from their caches."""
    out = []
    sessions = {n: c.sessions for n, c in blocks.items() if c.sessions}
    if sessions:
        out += ["", "Sessions: each turn sends the conversation so far, so the prompt grows turn by turn "
                "(TTFT of the successful streamed turns; cached tokens where the server reports them):", ""]
        out += table(["backend", "turn", "requests", "errors", "prompt tokens (mean)", "cached prompt tokens (mean)",
                      "TTFT p50 ms", "TTFT p99 ms"],
                     [[backend_label(summary, n), t.turn, t.requests, t.requests - t.ok, cell(t.prompt_tokens_mean),
                       cell(t.cached_prompt_tokens_mean), cell(t.ttft_p50_ms), cell(t.ttft_p99_ms)]
                      for n, s in sessions.items() for t in s.turns])
        out += [""] + [f"- {backend_label(summary, n)}: TTFT p50 {cell(s.first_ttft_p50_ms)} ms at turn 1, "
                       f"{cell(s.last_ttft_p50_ms)} ms at turn {s.turns[-1].turn}"
                       + (f" ({s.last_over_first:.2f}x)" if s.last_over_first is not None else "")
                       for n, s in sessions.items()]
    caches = {n: c.prompt_cache for n, c in blocks.items() if c.prompt_cache}
    if caches:
        out += ["", "Prompt cache (the servers' own count: `usage.prompt_tokens_details.cached_tokens` from vLLM and "
                "llama.cpp, `cacheReadInputTokens` from Bedrock):", ""]
        out += [f"- {backend_label(summary, n)}: {p.cached_prompt_tokens:,} of {p.prompt_tokens:,} prompt tokens "
                f"cached ({percent(p.cached_share, 1)}) over {p.requests} requests" for n, p in caches.items()]
    return out


def _reasoning(summary: Summary, blocks: Mapping[str, ChatSummary]) -> list[str]:
    """Reasoning tokens beside the answer tokens, priced where the backend is priced per token."""
    spent = {n: c.reasoning for n, c in blocks.items() if c.reasoning}
    if not spent:
        return []
    out = ["", "Reasoning tokens (the servers' own count: `usage.completion_tokens_details.reasoning_tokens`): "
           "output tokens spent thinking before the answer, billed as output, not in the text; every figure "
           "above counts them as output tokens:", ""]
    for n, r in spent.items():
        price = summary.prices.of(n).per_token
        priced = ""
        if price is not None and r.answer_tokens:
            per_m = price.usd_per_m_output * r.output_tokens / r.answer_tokens
            priced = (f"; at ${price.usd_per_m_output}/M output, ${per_m:.4g} per million answer tokens "
                      f"(${price.usd_per_m_output * r.reasoning_tokens / 1e6:.4g} of reasoning in these requests)")
        out.append(f"- {backend_label(summary, n)}: {r.reasoning_tokens:,} reasoning + {r.answer_tokens:,} answer "
                   f"tokens = {r.output_tokens:,} output tokens ({percent(r.reasoning_share, 1)} reasoning) over "
                   f"{r.requests} requests{priced}")
    return out


def section(summary: Summary) -> list[str]:
    out = ["## Chat benchmark", ""]
    blocks = {n: b.chat for n, b in summary.backends.items() if b.chat}
    if not blocks:
        return out + [not_run(summary, "chat", "Not run."), ""]
    out += [NOTE, ""] + _tables(summary, blocks) + _sessions(summary, blocks) + _reasoning(summary, blocks)
    resent = [(n, c) for n, c in blocks.items() if c.resends]
    if resent:
        out += ["", "Resends (a reused connection the server had closed; sent again on a new one, fresh clock):", ""]
        out += [f"- {n}: {c.resends} resent; {c.new_connections} requests went out on a new connection"
                for n, c in resent]
    reasons = [(n, r, k) for n, c in blocks.items() for r, k in c.error_reasons.items()]
    if reasons:
        out += ["", "Errors:", ""] + [f"- {n}: {r} (x{k})" for n, r, k in reasons]
    return out + [""]
