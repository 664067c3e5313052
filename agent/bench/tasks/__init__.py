"""What the benchmark asks: the counting question and its tools, the chat prompt, the orchestrator's
prompts, the BFCL cases. Data only, no I/O to a backend."""
