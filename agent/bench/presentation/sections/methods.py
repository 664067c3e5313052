"""How each figure of the report is computed, one line per figure."""

from __future__ import annotations

from ...results.formatting import MISSING
from ...results.summary import Summary

METHODS = [
    ("TTFT", "arrival of the first chunk carrying content minus the moment the request was sent "
             "(client clock, `time.perf_counter`, timestamped on receipt)"),
    ("chunk gap", "gaps between successive content chunks, first token excluded, pooled over all timed requests "
                  "(the chat section's p50 / p90 / p99); a chunk may carry more than one token"),
    ("ITL", "one request's mean gap between its content chunks, (last chunk - first chunk) / (chunks - 1): what the "
            "latency target limits; a level's ITL p99 is over its requests' means, so it is not the chunk gaps' p99"),
    ("e2e", "last byte of the response minus the send time"),
    ("decode tok/s", "(output tokens - tokens of the first arrival) / (last arrival - first arrival), per "
                     "request, where an arrival is one network read (chunks read together share its time); with "
                     "one token per chunk this is (output tokens - 1) / (last chunk - first chunk). Output tokens "
                     "from the server's usage, never from counting chunks; the first arrival's tokens counted from "
                     "its events when usage shows one token per event, else estimated from its share of the "
                     "characters. A reply is *multi-token* when its arrivals carried more than 2 tokens on average or "
                     "its events several tokens: its arrival times follow buffering, not decoding. A backend's "
                     "decode figures come from its per-token replies; only when every reply was multi-token are "
                     "they multi-token ones, marked so, not comparable with per-token streams and kept out of the "
                     "bandwidth-ceiling share; empty for a non-streamed reply"),
    ("client tok/s", "output tokens / e2e (the reference's figure: prefill and network included)"),
    ("aggregate tok/s", "at each concurrency level, the output tokens of its successful requests / their wall "
                        "time (first send to last byte), exactly c requests in flight; empty when a successful "
                        "request has no usage count"),
    ("requests/s", "successful requests of a level / the same wall time"),
    ("failed request", "HTTP error, timeout, refused or dropped connection, an error event in the stream, a "
                       "stream cut off with neither a finish reason nor its end marker, finish reason abort or "
                       "error (or a content filter), an event that is not a chat-completion chunk, an empty "
                       "completion, 200 OK with zero tokens. No figure is computed from a failed request; its "
                       "count is beside every figure"),
    ("resends", "a request written on a reused keep-alive connection that the server had already closed is "
                "sent once more on a new connection with a fresh clock; each resend is counted"),
    ("cold", "the first request a backend got in this run (the untimed warm-up), reported apart from the "
             "timed ones"),
    ("percentiles", None),
    ("$ per M output", "$/h / (aggregate output tok/s x 3600) x 1e6, at each measured concurrency; Bedrock: "
                       "output $/M + (input tokens per output token) x input $/M"),
    ("24x7 monthly", "$/h x 730 h"),
    ("break-even", "$/h / (Bedrock $ per output token x 3600): the sustained output tok/s above which the rig "
                   "is cheaper; monthly tokens = that rate x 3600 x 730; shown output-only and at the "
                   "measured input:output mix of the rig's own chat requests"),
    ("ceiling", "device bandwidth / bytes streamed per decode step (batch 1, KV reads ignored); per-core "
                "bandwidth for a single-NeuronCore graph; share = measured decode p50 / ceiling"),
    ("failed (agent run)", "the run raised (timeout, transport error, max_tokens) or its reply was empty; it gets "
                           "no grade and is counted apart from the graded runs"),
    ("correct", "the count the final answer states equals the true count; the count is read from the numbers that "
                "can only be counts (thresholds, ranges, id lists, tool arguments, the restated table size, negated "
                "numbers and counts of the other ids are set aside; corrections are followed); 95% Wilson interval "
                "over the graded runs"),
    ("unreadable", "no single count can be read with confidence (none stated, conflicting counts, a hedged count); "
                   "its own verdict, never a wrong count"),
    ("right filter", "the call the final answer relied on, the last valid count_ids call (known op, integer value, "
                     "no missing or extra argument), selects exactly the true id set; first call right and the "
                     "number of distinct filters tried are shown beside it"),
    ("text tool calls", "one per tool call written as text instead of being made; a text that describes a call the "
                        "model really made (same tool, same arguments) is not one"),
]
"""(figure, how); the percentile method is the one ``run.json`` records."""


def section(summary: Summary) -> list[str]:
    percentiles = summary.run.methods.get("percentiles", MISSING)
    out = ["## How each figure is computed", ""] + [f"- **{k}**: {v or percentiles}" for k, v in METHODS]
    return out + ["", "Every figure above is computed from `summary.json`, which is computed from `requests.jsonl` "
                  "and `run.json` (`agent/bench/analysis/summary.py`).", ""]
