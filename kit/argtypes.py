"""Value parsers that both command families share (``rigs`` may not import ``agent``): each takes the text of one
option and returns its value, or raises ``argparse.ArgumentTypeError`` with one line naming the problem and an
example."""

from __future__ import annotations

import argparse
import math


def bytes_per_s(text: str) -> float:
    """A byte rate above 0 (``600000`` or ``6e5``): ``--tunnel-limit`` of ``agent.run`` and ``rigs rehearse``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of bytes a second, e.g. 600000") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text}: give a byte rate above 0, e.g. 600000")
    return value
