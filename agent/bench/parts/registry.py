"""Every part, registered once: a new lane is its module in this package and one line here.

The order is the order of a run: the chat part first, so that its *cold* request really is each
backend's first, then the open loop (``--rate``; ``--rate peak`` reads the capacity the chat part found),
then the counting part (both question sets), the BFCL cases, the quality lane, the tasks lane (BFCL's
multi-turn tasks) and the orchestrator. Loading this module loads no model library (strands,
aiohttp, pydantic): the parts import those where they run.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from . import bfcl, chat, counting, open_loop, orchestrator, quality, tasks
from .part import Part

PARTS: Mapping[str, Part] = {part.name: part for part in (
    chat.PART,
    open_loop.PART,
    counting.PART,
    bfcl.PART,
    quality.PART,
    tasks.PART,
    orchestrator.PART,
)}
"""Each part by its name in ``--demos``, in the order of a run."""


def chosen(demos: Sequence[str]) -> list[Part]:
    """The parts named in ``demos``, in the order of a run."""
    return [part for name, part in PARTS.items() if name in demos]
