"""The ``instructions`` suite: IFEval's published instruction types on seeded short prompts.

IFEval (Zhou et al., 2023, arXiv:2311.07911; github.com/google-research/google-research,
``instruction_following_eval``, Apache-2.0) grades "verifiable instructions" in code: a lowercase
reply, a phrase to end with, words to include or avoid, a word count, a JSON reply, and so on. Its
541 prompts ship in no package, so this suite writes its own short prompts (a topic and a task,
drawn by seed) and adds one instruction each, worded exactly as IFEval words it, with parameters
sized so the reply fits the lane's output cap. The checks are IFEval's own
(:mod:`agent.bench.grading.instruction_checks`). Each item's reference answer is one reply built to
follow its instruction; any reply that passes the check and does the task asked is right.

**The task counts too.** IFEval's prompts ask for a piece of writing and add an instruction; a reply
that writes nothing ("I'm ready to assist. What's on your mind?" has no comma) or quotes the
instruction back follows the letter of the check without doing what was asked. So every item also
states its task (``grading.task``): at least :data:`MIN_TASK_WORDS` words, and a word of the topic
(its name or a word a reply about it would use) — except the yes-or-no items, whose task is to pick
one of the given options.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import count
from random import Random
from typing import Any, Callable, Final, Iterator

from .items import Item

TOPICS: Final = (
    ("the ocean", ("water", "waves", "blue", "fish")),
    ("coffee", ("cup", "morning", "beans", "hot")),
    ("a bicycle", ("wheels", "ride", "pedal", "bike")),
    ("the moon", ("night", "sky", "light", "stars")),
    ("a library", ("books", "read", "quiet", "shelves")),
    ("rain", ("wet", "umbrella", "clouds", "water")),
    ("a garden", ("flowers", "plants", "green", "soil")),
    ("winter", ("snow", "cold", "ice", "coat")),
    ("a train", ("tracks", "station", "travel", "fast")),
    ("bread", ("flour", "bake", "oven", "eat")),
    ("a forest", ("trees", "leaves", "green", "animals")),
    ("music", ("song", "sound", "listen", "dance")),
    ("a city", ("streets", "buildings", "cars", "busy")),
    ("the sun", ("hot", "light", "sky", "warm")),
    ("a dog", ("pet", "bark", "tail", "walk")),
    ("a mountain", ("high", "climb", "peak", "snow")),
    ("tea", ("cup", "hot", "leaves", "drink")),
    ("a river", ("water", "flow", "fish", "bank")),
    ("chess", ("game", "board", "king", "play")),
    ("a kitchen", ("cook", "food", "stove", "eat")),
    ("the desert", ("sand", "hot", "dry", "sun")),
    ("a school", ("students", "teacher", "learn", "class")),
    ("a computer", ("screen", "keyboard", "data", "work")),
    ("summer", ("hot", "sun", "beach", "warm")),
    ("a market", ("buy", "sell", "food", "shop")),
    ("a camera", ("photo", "lens", "picture", "take")),
    ("the wind", ("air", "blow", "cold", "strong")),
    ("a bridge", ("river", "cross", "road", "water")),
    ("apples", ("fruit", "red", "tree", "eat")),
    ("a clock", ("time", "hour", "hands", "tick")),
)  # fmt: skip
"""Topics, each with words a reply about it would likely use (the words to avoid are drawn from these)."""

KEYWORDS: Final = ("morning", "friend", "simple", "history", "color", "journey", "window", "story", "gift", "corner")
SENTENCE_TASKS: Final = ("Describe {topic} in one sentence.", "Write one sentence about {topic}.",
                         "Tell me one thing about {topic}.", "Say why someone might like {topic}.")  # fmt: skip
LIST_TASK: Final = "List some facts about {topic}."
YES_NO_TASK: Final = "Is {topic} worth learning about?"
ENDINGS: Final = ("Any other questions?", "Is there anything else I can help with?")
"""IFEval's end phrases."""
CONSTRAINED_OPTIONS: Final = ("My answer is yes.", "My answer is no.", "My answer is maybe.")
"""IFEval's options for a constrained response."""
MIN_TASK_WORDS: Final = 3
"""The fewest words that can state a thing about a topic ("Coffee is hot.")."""


@dataclass(frozen=True, slots=True)
class Instruction:
    """One IFEval instruction type: its id, how it is worded, its drawn arguments, the task it is
    added to, and how a compliant reference reply is made from a plain sentence."""

    id: str
    wording: str
    arguments: Callable[[Random, tuple[str, ...]], dict[str, Any]]
    reference: Callable[[str, str, dict[str, Any]], str]
    task: str | None = None
    about_topic: bool = True


def _none(rng: Random, words: tuple[str, ...]) -> dict[str, Any]:
    return {}


def _padded(sentence: str, num_words: int) -> str:
    filler = "and it stays with you through every season of the year in small and quiet ways".split()
    words = sentence.split()
    while len(words) < num_words:
        words += filler[: num_words - len(words)]
    return " ".join(words) + "."


def _words_arguments(rng: Random, words: tuple[str, ...]) -> dict[str, Any]:
    relation = rng.choice(("less than", "at least"))
    return {"relation": relation, "num_words": rng.randint(6, 12) if relation == "less than" else rng.randint(8, 16)}


def _words_reference(topic: str, sentence: str, a: dict[str, Any]) -> str:
    if a["relation"] == "less than":
        return f"{topic[0].upper()}{topic[1:]} is lovely."
    return _padded(sentence, a["num_words"])


def _bullets_reference(topic: str, sentence: str, a: dict[str, Any]) -> str:
    return "\n".join(f"* Fact {i + 1} about {topic}." for i in range(a["num_bullets"]))


INSTRUCTIONS: Final = (
    Instruction("change_case:english_lowercase", "Your entire response should be in English, and in all lowercase "
                "letters. No capital letters are allowed.", _none, lambda t, s, a: s.lower() + "."),
    Instruction("change_case:english_capital", "Your entire response should be in English, and in all capital "
                "letters.", _none, lambda t, s, a: s.upper() + "."),
    Instruction("startend:quotation", "Wrap your entire response with double quotation marks.", _none,
                lambda t, s, a: f'"{s}."'),
    Instruction("startend:end_checker", "Finish your response with this exact phrase {end_phrase}. No other words "
                "should follow this phrase.", lambda rng, w: {"end_phrase": rng.choice(ENDINGS)},
                lambda t, s, a: f"{s}. {a['end_phrase']}"),
    Instruction("punctuation:no_comma", "In your entire response, refrain from the use of any commas.", _none,
                lambda t, s, a: f"{s}."),
    Instruction("detectable_format:json_format", "Entire output should be wrapped in JSON format. You can use "
                "markdown ticks such as ```.", _none, lambda t, s, a: json.dumps({"answer": f"{s}."})),
    Instruction("keywords:existence", "Include keywords {keywords} in the response.",
                lambda rng, w: {"keywords": rng.sample(KEYWORDS, 2)},
                lambda t, s, a: f"{s}, like a {a['keywords'][0]} or a {a['keywords'][1]}."),
    Instruction("keywords:forbidden_words", "Do not include keywords {forbidden_words} in the response.",
                lambda rng, w: {"forbidden_words": rng.sample(w, 2)}, lambda t, s, a: f"{s}."),
    Instruction("length_constraints:number_words", "Answer with {relation} {num_words} words.", _words_arguments,
                _words_reference),
    Instruction("detectable_format:title", "Your answer must contain a title, wrapped in double angular brackets, "
                "such as <<poem of joy>>.", _none, lambda t, s, a: f"<<{t.title()}>>\n{s}."),
    Instruction("detectable_format:number_bullet_lists", "Your answer must contain exactly {num_bullets} bullet "
                "points. Use the markdown bullet points such as:\n* This is point 1. \n* This is point 2",
                lambda rng, w: {"num_bullets": rng.randint(2, 4)}, _bullets_reference, task=LIST_TASK),
    Instruction("detectable_format:constrained_response", "Answer with one of the following options: {options}",
                _none, lambda t, s, a: CONSTRAINED_OPTIONS[0], task=YES_NO_TASK, about_topic=False),
    Instruction("detectable_content:postscript", "At the end of your response, please explicitly add a postscript "
                "starting with {postscript_marker}",
                lambda rng, w: {"postscript_marker": rng.choice(("P.S.", "P.P.S"))},
                lambda t, s, a: f"{s}.\n{a['postscript_marker']} Thank you."),
)  # fmt: skip
"""Thirteen of IFEval's 25 types: those whose reply fits a short output cap and whose check needs no
language detector or sentence splitter (both download data in IFEval's code)."""


def make_item(rng: Random, item_id: str, index: int) -> Item:
    """One item from its own random stream."""
    instruction = rng.choice(INSTRUCTIONS)
    topic, related = rng.choice(TOPICS)
    sentence = f"{topic[0].upper()}{topic[1:]} is part of daily life for many people"
    arguments = instruction.arguments(rng, tuple(w for w in related if w not in sentence.lower().split()))
    task = (instruction.task or rng.choice(SENTENCE_TASKS)).format(topic=topic)
    wording = instruction.wording.format(options=repr(CONSTRAINED_OPTIONS), **arguments)
    about = [topic.split()[-1], *related] if instruction.about_topic else []
    return Item(id=item_id, suite="instructions", source=f"IFEval instruction type {instruction.id} [{index}]",
                question=f"{task} {wording}", answer=instruction.reference(topic, sentence, arguments),
                grading={"kind": "instructions", "instructions": [{"id": instruction.id, "kwargs": arguments}],
                         "task": {"min_words": MIN_TASK_WORDS, "about": about}})


def stream(suite_seed: int, lane_seed: int) -> Iterator[Item]:
    """The suite's items in order; item ``i`` comes from ``Random(suite_seed + i)`` alone."""
    for index in count():
        yield make_item(Random(suite_seed + index), f"instructions/{lane_seed}/{index}", index)
