"""The quality lane's grading on crafted replies: the answer read through extra words, units,
thousands separators, markdown and LaTeX; labels read as whole words; refusals; replies cut at the
output cap; IFEval's checks; a failed request never graded."""

from __future__ import annotations

import pytest

from agent.bench.grading.instruction_checks import CHECKS, failed_checks
from agent.bench.grading.quality import grade, grade_reply, verdicts
from agent.bench.tasks.quality.gym import FAMILY_LABELS
from agent.bench.tasks.quality.instructions import INSTRUCTIONS

NUMBER = {"kind": "number"}
YES_NO = {"kind": "choice", "labels": ["Yes", "No"]}
FAMILY = {"kind": "choice", "labels": list(FAMILY_LABELS)}


@pytest.mark.parametrize("reply", [
    "394", "394.", "The answer is 394.", "They have 394 points in total.", "**394**", "Answer: **394** points",
    "$\\boxed{394}$", "\\(\\boxed{394}\\)", "Joseph has 242 and Jennifer 152, so the total is 394.",
    "242 + 152 = 394", "The final answer is 394 (242 + 152).", "`394`", "394 points", "## Answer\n394",
    "<thinking>242 plus 152 is 396? no, 394</thinking>394", "The total is 394.0.",
])  # fmt: skip
def test_a_number_is_read_through_the_words_and_markup_around_it(reply):
    v = grade_reply(reply, "394", NUMBER)
    assert (v.outcome, v.read in ("394", "394.0")) == ("right", True), v


@pytest.mark.parametrize(("reply", "answer"), [
    ("It costs $1,234,567 in all.", "1234567"), ("\\boxed{-12}", "-12"), ("The result is \u221212.", "-12"),
    ("-( 2 - 7 ) = 5", "5"), ("\\frac{3}{4}", "3/4"), ("0.75", "3/4"), ("She earns $12 per hour.", "12"),
    ("**1,000** apples", "1000"), ("The answer is 6, since 2 x 3 = 6.", "6"),
])  # fmt: skip
def test_units_separators_signs_and_fractions(reply, answer):
    assert grade_reply(reply, answer, NUMBER).outcome == "right"


def test_a_wrong_number_is_wrong_and_no_number_is_unreadable():
    wrong = grade_reply("The answer is 393.", "394", NUMBER)
    assert (wrong.outcome, wrong.read, wrong.reason) == ("wrong", "393", "read 393, expected 394")
    # the explicit answer wins over a later number in the explanation
    assert grade_reply("The answer is 393, because 242 + 152 = 394.", "394", NUMBER).outcome == "wrong"
    none = grade_reply("I think they have quite a lot of points.", "394", NUMBER)
    assert (none.outcome, none.read, none.refusal) == ("unreadable", None, False)


@pytest.mark.parametrize(("reply", "read"), [
    ("Yes", "Yes"), ("yes.", "Yes"), ("**No**", "No"), ("No, it does not follow.", "No"),
    ("The answer is: Yes", "Yes"), ("\\boxed{No}", "No"), ("Answer: no. No lions are programmers.", "No"),
])  # fmt: skip
def test_yes_or_no(reply, read):
    v = grade_reply(reply, read, YES_NO)
    assert (v.outcome, v.read) == ("right", read)


@pytest.mark.parametrize(("reply", "read"), [
    ("mother-in-law", "mother-in-law"), ("Sarah is Elizabeth's mother-in-law.", "mother-in-law"),
    ("Grandmother", "grandmother"), ("She is her **mother**.", "mother"), ("Ethan is Hannah's husband.", "husband"),
])  # fmt: skip
def test_a_label_is_a_whole_word_so_mother_is_not_read_in_grandmother(reply, read):
    assert grade_reply(reply, read, FAMILY).read == read
    assert grade_reply(reply, "aunt", FAMILY).outcome == "wrong"


def test_a_reply_naming_several_labels_without_a_cue_is_unreadable():
    v = grade_reply("Sarah could be a mother or a grandmother.", "mother", FAMILY)
    assert (v.outcome, v.read) == ("unreadable", None) and "several labels (mother, grandmother)" in v.reason
    assert grade_reply("Mother, not grandmother.", "mother", FAMILY).outcome == "right"  # its first word


@pytest.mark.parametrize("reply", [
    "I'm sorry, but I can't help with that.", "I cannot answer this question.", "Sorry, I am unable to determine it.",
    "As an AI, I do not have opinions.", "I can\u2019t provide that.",
])  # fmt: skip
def test_a_refusal_is_unreadable_and_flagged(reply):
    for grading, answer in ((NUMBER, "394"), (YES_NO, "Yes"), (INSTRUCTION_GRADING, "x")):
        v = grade_reply(reply, answer, grading)
        assert (v.outcome, v.refusal) == ("unreadable", True)


def test_an_apology_that_still_answers_is_graded():
    v = grade_reply("I'm sorry for the confusion; the answer is 394.", "394", NUMBER)
    assert (v.outcome, v.refusal) == ("right", False)


def test_a_reply_cut_at_the_cap_is_read_only_from_an_explicit_cue():
    # cut before the answer: neither its last number nor a half-said label counts
    assert grade_reply("To add -58 and -70, we add them: -58 + -70 =", "-128", NUMBER, cut=True).outcome == "unreadable"
    cut = grade_reply("Sarah is Elizabeth's mother", "mother-in-law", FAMILY, cut=True)
    assert cut.outcome == "unreadable" and "cut off" in cut.reason
    # the same text, finished, is read as usual; a cut reply with a cue is read from the cue
    assert grade_reply("Sarah is Elizabeth's mother", "mother-in-law", FAMILY).outcome == "wrong"
    assert grade_reply("The answer is **-128**, found by adding", "-128", NUMBER, cut=True).outcome == "right"
    assert grade_reply("Yes, because all programmers are", "Yes", YES_NO, cut=True).outcome == "right"


def record(text, *, answer="394", grading=NUMBER, **extra):
    return {"part": "quality", "backend": "g6", "item": "arithmetic/0/1", "suite": "arithmetic", "text": text,
            "answer": answer, "grading": grading, "error": None, "finish_reason": "stop", **extra}


def test_a_failed_request_is_never_graded_even_with_the_right_text():
    v = grade(record("394", error="HTTP 500: boom"))
    assert (v.outcome, v.graded, v.read) == ("failed", False, None) and "HTTP 500" in v.reason
    assert grade(record("394")).outcome == "right"
    assert grade(record("394", not_sent="prompt over the limit")).outcome == "not_sent"
    # a record cut by Bedrock's cap (stopReason max_tokens) is a cut reply
    assert grade(record("We first add 242 and 152 to get 394", finish_reason="max_tokens")).outcome == "unreadable"


def test_verdicts_are_per_backend_and_item():
    records = [record("394"), {**record("393"), "backend": "g5g"}, {"part": "chat", "backend": "g6"}]
    table = verdicts(records)
    assert {b: {i: v.outcome for i, v in items.items()} for b, items in table.items()} == {
        "g6": {"arithmetic/0/1": "right"}, "g5g": {"arithmetic/0/1": "wrong"}}


INSTRUCTION_GRADING = {"kind": "instructions", "instructions": [{"id": "punctuation:no_comma", "kwargs": {}}]}
CHECK_CASES = [
    ("change_case:english_lowercase", {}, "the ocean is wide.", "The ocean is wide."),
    ("change_case:english_capital", {}, "THE OCEAN IS WIDE.", "THE OCEAN is wide."),
    ("startend:quotation", {}, ' "The ocean is wide." ', "The ocean is \"wide\"."),
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, "It is wide. Any other questions?",
     "Any other questions? It is wide."),
    ("punctuation:no_comma", {}, "It is wide and deep.", "It is wide, and deep."),
    ("detectable_format:json_format", {}, '```json\n{"answer": "wide"}\n```', "answer: wide"),
    ("keywords:existence", {"keywords": ["friend", "window"]}, "A friend at the window.", "A friend at the door."),
    ("keywords:forbidden_words", {"forbidden_words": ["water", "blue"]}, "It is deep and waterproof.",
     "It is Blue."),
    ("length_constraints:number_words", {"relation": "less than", "num_words": 4}, "It is wide.",
     "It is very wide."),
    ("length_constraints:number_words", {"relation": "at least", "num_words": 4}, "It is very wide.", "It is wide."),
    ("detectable_format:title", {}, "<<The Sea>>\nIt is wide.", "<< >> It is wide."),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* Wide.\n- Deep.", "* Wide.\n* Deep.\n* Blue."),
    ("detectable_format:constrained_response", {}, "My answer is maybe.", "Maybe."),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "It is wide.\nP.S. Swim.", "It is wide. PS swim"),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Wide.\nP.P.S Swim.", "Wide.\nP.S. Swim."),
]  # fmt: skip


@pytest.mark.parametrize(("instruction", "kwargs", "follows", "breaks"), CHECK_CASES)
def test_ifeval_checks(instruction, kwargs, follows, breaks):
    instructions = [{"id": instruction, "kwargs": kwargs}]
    assert failed_checks(follows, instructions) == []
    assert failed_checks(breaks, instructions) == [instruction]
    grading = {"kind": "instructions", "instructions": instructions}
    assert grade_reply(follows, "", grading).outcome == "right"
    wrong = grade_reply(breaks, "", grading)
    assert wrong.outcome == "wrong" and wrong.reason == f"does not follow {instruction}"


def test_every_instruction_type_the_lane_asks_has_a_check_and_a_test():
    asked = {i.id for i in INSTRUCTIONS}
    assert asked == set(CHECKS) == {c[0] for c in CHECK_CASES}


def test_novas_thinking_block_is_not_part_of_the_reply_an_instruction_is_checked_on():
    lowercase = {"kind": "instructions", "instructions": [{"id": "change_case:english_lowercase", "kwargs": {}}]}
    assert grade_reply("<thinking>Write it in lowercase.</thinking>the ocean is wide.", "", lowercase).outcome == "right"
    assert grade_reply("<thinking>ok</thinking>The ocean is wide.", "", lowercase).outcome == "wrong"
