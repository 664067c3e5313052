"""How the benchmark talks to a backend: one module per backend kind (timed streaming chat, tool calls,
the strands model), the one stream reader, and what counts as a failed reply."""
