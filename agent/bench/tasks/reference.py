"""What the benchmark asks: the reference's counting question and tools, the strict id set,
the chat prompt and the orchestrator's prompts. Data only, no I/O.

The reference's constants (``demo1_counting.py``, ``demo2_orchestrator.py`` and ``bench_chat.py``
of xbill9/aws-inference-strands; docs/reference-run.md) are copied exactly so results compare
with its recorded ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Sequence

OPS: Final[tuple[str, ...]] = (">=", ">", "<=", "<", "==")
"""The comparison operators ``count_ids`` accepts (the reference's ``OPS``)."""

COUNTING_SYSTEM_PROMPT: Final = (
    "You answer questions about a table of integer ids. Use the tools to look at the table. "
    "End with a sentence that states the number."
)


@dataclass(frozen=True, slots=True)
class QuestionSet:
    """One counting question over one id table, with its true predicate.

    Attributes:
        name: ``counting`` (the reference's set) or ``counting_strict``.
        ids: The table, in the order the tools return it.
        question: The user turn.
        truth_op: Operator of the true predicate (``id <truth_op> truth_value``).
        truth_value: Threshold of the true predicate.
    """

    name: str
    ids: tuple[int, ...]
    question: str
    truth_op: str
    truth_value: int

    @property
    def truth_ids(self) -> frozenset[int]:
        """The ids the true predicate selects."""
        return select_ids(self.ids, self.truth_op, self.truth_value)

    @property
    def truth(self) -> int:
        """The true count."""
        return len(self.truth_ids)


def select_ids(ids: tuple[int, ...], op: str, value: int) -> frozenset[int]:
    """The ids matching ``id <op> value``.

    Raises:
        ValueError: ``op`` is not one of :data:`OPS`.
    """
    if op == ">=":
        return frozenset(i for i in ids if i >= value)
    if op == ">":
        return frozenset(i for i in ids if i > value)
    if op == "<=":
        return frozenset(i for i in ids if i <= value)
    if op == "<":
        return frozenset(i for i in ids if i < value)
    if op == "==":
        return frozenset(i for i in ids if i == value)
    raise ValueError(f"op must be one of {sorted(OPS)}")


REFERENCE_SET: Final = QuestionSet(
    name="counting",
    ids=(0, 2, 3, 20, 21, 22, 23, 10, 11, 12, 13),
    question="How many of the ids are 10 or more? Answer with the number.",
    truth_op=">=",
    truth_value=10,
)
"""The reference's set. No id lies between 4 and 9, so every threshold from ``id > 3`` to
``id >= 10`` selects the same ids: its "right filter" grade cannot tell them apart."""

STRICT_SET: Final = QuestionSet(
    name="counting_strict",
    ids=(9, 0, 21, 10, 4, 13, 8, 23, 11, 5, 20, 12, 7, 22, 6, 3, 2, 14, 1),
    question="How many of the ids are 10 or more? Answer with the number.",
    truth_op=">=",
    truth_value=10,
)
"""Boundary ids on both sides of every plausible threshold: every integer from 0 to 14 is
present, so ``id >= 9`` (one more id) and ``id > 10`` (one fewer) both fail and only
``id >= 10`` or its integer equivalent ``id > 9`` passes. The true count (9) differs from
the reference's (8), so a remembered answer does not pass either."""

QUESTION_SETS: Final = (REFERENCE_SET, STRICT_SET)

CHAT_PROMPT: Final = "Write a short paragraph about the ocean."
"""The reference's chat-bench prompt (its ``bench_chat.py``), 100 output tokens, temperature 0."""
CHAT_MAX_TOKENS: Final = 100

ORCHESTRATOR_SYSTEM_PROMPT: Final = (
    "You coordinate several model backends. When asked, put the user's question to every backend "
    "using its ask_ tool, then call scoreboard and quote its table exactly. Do not compute, round or "
    "re-rank any number yourself."
)
ORCHESTRATOR_QUESTION: Final = "What is the capital of France? Answer in one word."
ORCHESTRATOR_ASK_MAX_TOKENS: Final = 64


def orchestrator_user_turn(question: str = ORCHESTRATOR_QUESTION) -> str:
    """The orchestrator's user turn (the reference's wording)."""
    return f"Ask every backend this question and show the scoreboard: {question}"


# --- the orchestrator's tools and turns -------------------------------------------------------

SCOREBOARD_HEADER = "| backend | answer | seconds | tokens/s |"
SUBMIT_TOOL = "submit_summary"
FOLLOW_UP_SYSTEM_PROMPT = f"You record, with the {SUBMIT_TOOL} tool, an answer you have already given."


def tool_name(backend_name: str) -> str:
    """``ask_<name>`` with anything but letters, digits and ``_`` replaced."""
    return "ask_" + re.sub(r"[^A-Za-z0-9_]", "_", backend_name)


def submit_instruction(names: Sequence[str]) -> str:
    """What the system prompt adds to the reference's: commit the answer with ``submit_summary``."""
    return (f"When you have quoted the scoreboard, call {SUBMIT_TOOL} once, last, with winner = the name of the "
            f"backend the scoreboard puts first (one of: {', '.join(names)}) and table = the scoreboard table "
            "exactly as it was returned.")


def follow_up_turn(user_turn: str, reply: str, names: Sequence[str]) -> str:
    """The one follow-up turn for a run that ended without ``submit_summary``: commit what it said."""
    return (f"You were asked: {user_turn}\n\nYour reply was:\n{reply}\n\nCommit that answer now: call {SUBMIT_TOOL} "
            f"once, with winner = the name of the backend your reply names as fastest (one of: {', '.join(names)}) "
            "and table = the table your reply quoted, exactly as written there.")
