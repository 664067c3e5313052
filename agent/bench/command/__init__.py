"""The benchmark command: its options, the runner that drives the parts, and the evidence folder."""
