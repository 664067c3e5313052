"""Every key of the quality lane is right: each solver on stories and expressions whose answer is worked
out by hand here, and every item of the default lane and of two more seeds against them."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from agent.bench.grading.quality import grade_reply
from agent.bench.tasks.quality import keys, lane

FEMALE = frozenset({"Jennifer", "Jessica", "Mary", "Susan", "Emma"})
MALE = frozenset({"Henry", "Christopher", "Noah", "Bob", "James"})


@pytest.fixture(scope="module", params=[0, 1, 2])
def items(request):
    return lane.select(600, request.param)


def test_an_in_law_is_named_from_the_asked_persons_side():
    """The issue's own example: Jessica married Jennifer's son, so she is Jennifer's daughter-in-law
    (reasoning-gym keys it "mother-in-law", Jennifer's role), and Jennifer is Jessica's mother-in-law."""
    story = ("Henry is married to Jennifer. They have a child called Christopher. Christopher is married to "
             "Jessica. They have children called Noah and Mary.")
    asked = {("Jessica", "Jennifer"): "daughter-in-law", ("Jennifer", "Jessica"): "mother-in-law",
             ("Henry", "Jessica"): "father-in-law", ("Christopher", "Henry"): "son",
             ("Henry", "Noah"): "grandfather", ("Mary", "Noah"): "sister", ("Noah", "Mary"): "brother",
             ("Jessica", "Christopher"): "wife", ("Mary", "Jessica"): "daughter", ("Noah", "Henry"): "grandson"}
    for (a, b), relation in asked.items():
        assert keys.family(f"{story}\n\nWhat relation is {a} to {b}? Answer with a single word.", FEMALE, MALE) == relation


def test_a_family_story_that_does_not_say_the_relation_gives_no_key():
    story = "Henry is married to Jennifer. They have a child called Christopher. Bob is married to Susan."
    assert keys.family(f"{story}\n\nHow is Bob related to Henry? Provide the relationship in one word.", FEMALE, MALE) is None
    assert keys.family(f"{story}\n\nWhat is Zed to Henry? Respond only with the word.", FEMALE, MALE) is None
    assert keys.family("Henry sings.\n\nWhat is Henry to Jennifer? Respond.", FEMALE, MALE) is None


def test_arithmetic_is_evaluated_exactly():
    assert keys.arithmetic("Calculate ( -( -84 + -35 ) + -11 ) - 73.") == 35
    assert keys.arithmetic("Calculate 8 / -( 5 * -8 + -39 ).") == Fraction(8, 79)
    assert keys.arithmetic("Calculate 4 / ( 2 - 2 ).") is None
    assert keys.arithmetic("Calculate __import__('os').") is None


def test_a_sibling_puzzle_is_answered_only_about_the_person_it_introduces():
    assert keys.aiw("Jennifer has 1 brother and she also has 5 sisters. How many sisters does Jennifer's brother have?") == 6
    assert keys.aiw("Susan has 2 sisters and she also has 4 brothers. How many sisters does Bob's brother have?") is None
    assert keys.aiw("Mary has 3 male friends and she also has 1 female friend. They all are friends with each other and "
                    "have no other friends aside. How many female friends does James, a male friend of Mary, have?") == 2
    assert keys.singular_counts("Mary has 1 brothers and she also has 1 female friends.") == \
        "Mary has 1 brother and she also has 1 female friend."


@pytest.mark.parametrize(("premises", "conclusion", "valid"), [
    (["All chefs are mammals", "All mammals are animals"], "All chefs are animals", True),
    (["All chefs are mammals", "No mammals are butterflies"], "Some chefs are not butterflies", True),
    (["All ants are dolphins", "Some dolphins are not spiders"], "Some ants are not spiders", False),
    (["All parents are writers", "Some writers are doctors"], "Some parents are doctors", False),
    (["Some teachers are not parents", "All parents are lawyers"], "Some lawyers are parents", True),
    (["No cats are dogs"], "No dogs are cats", True),
    (["Some cats are not dogs"], "Some dogs are not cats", False),
])
def test_a_syllogism_is_valid_only_when_no_model_of_its_terms_breaks_it(premises, conclusion, valid):
    listed = "\n".join(f"{i}. {p}" for i, p in enumerate(premises, 1))
    question = f"Consider these statements:\n{listed}\n\nDoes it logically follow that:\n{conclusion}?\n(Answer Yes or No)"
    assert keys.syllogism(question) is valid


def test_every_key_agrees_with_the_answer_worked_out_from_its_question(items):
    from reasoning_gym.graphs.family_relationships import FamilyRelationshipsConfig

    config = FamilyRelationshipsConfig()
    solved = {
        "arithmetic": lambda q: keys.arithmetic(q),
        "aiw": lambda q: keys.aiw(q),
        "syllogism": lambda q: {True: "Yes", False: "No"}.get(keys.syllogism(q)),
        "family": lambda q: keys.family(q, frozenset(config.female_names), frozenset(config.male_names)),
    }
    disagree = [(i.id, i.answer, solved[i.suite](i.question)) for i in items if i.suite in solved
                and str(solved[i.suite](i.question)) != i.answer]
    assert disagree == []


def test_every_sibling_question_is_about_the_story_and_in_good_grammar(items):
    aiw = [i for i in items if i.suite == "aiw"]
    assert len(aiw) == 100
    for item in aiw:
        subject = item.question.split()[0]
        assert re.search(rf"does (?:{subject}'s brother|\w+, a male friend of {subject},) have\?$", item.question), item.id
        assert not re.search(r"\b1 \w+(?: friend)?s\b", item.question), item.id


def test_the_in_law_items_are_kept_with_their_right_key(items):
    in_law = [i for i in items if i.suite == "family" and i.answer.endswith("-in-law")]
    assert in_law and {i.answer for i in in_law} <= {"daughter-in-law", "son-in-law", "mother-in-law", "father-in-law"}


def test_a_non_answer_or_the_instruction_quoted_back_does_not_pass_an_instruction_item(items):
    by_type = {i.grading["instructions"][0]["id"]: i for i in items if i.suite == "instructions"}
    no_comma, postscript = by_type["punctuation:no_comma"], by_type["detectable_content:postscript"]
    marker = postscript.grading["instructions"][0]["kwargs"]["postscript_marker"]
    assert grade_reply("I'm ready to assist. What's on your mind?", no_comma.answer, no_comma.grading).outcome == "wrong"
    quoted = f"At the end of your response, please explicitly add a postscript starting with {marker}"
    verdict = grade_reply(quoted, postscript.answer, postscript.grading)
    assert verdict.outcome == "wrong" and verdict.reason.startswith("does not do the task asked (a reply about")
    assert grade_reply(no_comma.answer, no_comma.answer, no_comma.grading).outcome == "right"
    assert grade_reply("Ok.", no_comma.answer, no_comma.grading).reason == \
        "does not do the task asked (at least 3 words; the reply has 1)"


def test_a_record_of_the_first_lane_is_graded_as_it_was_then():
    """Records carry their grading: one written before items stated their task is regraded without it."""
    grading = {"kind": "instructions", "instructions": [{"id": "punctuation:no_comma", "kwargs": {}}]}
    assert grade_reply("I'm ready to assist. What's on your mind?", "x", grading).outcome == "right"
