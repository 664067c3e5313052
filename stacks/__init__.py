"""CDK deployment units. Stacks wire the constructs in `stacks.parts` together."""
