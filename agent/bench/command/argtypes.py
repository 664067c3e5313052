"""Argument types for the command's numeric options: each rejects a bad value with one line that
names the problem (argparse prints it and exits with status 2).

``float("nan")``, ``float("inf")``, zero and negative values are all accepted by a plain
``type=float``; a NaN timeout switches aiohttp's timeout off and would reach ``run.json`` as a
bare ``NaN``, which is not JSON.
"""

from __future__ import annotations

import argparse
import math


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small: give at least 1")
    return value


def non_negative_int(text: str) -> int:
    """A whole number of at least 0."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: give 0 or more")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds greater than 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a usable number of seconds: give a finite number above 0")
    return value
