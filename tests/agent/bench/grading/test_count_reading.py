"""Reading the stated count: the phrasing corpus (tests/agent/bench/data/count_phrasings.yaml) and
the reader's parts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agent.bench.grading.count_reading import READ, UNREADABLE, normalize, read_count
from agent.bench.tasks.reference import REFERENCE_SET, STRICT_SET

SETS = {"counting": REFERENCE_SET, "counting_strict": STRICT_SET}
CORPUS = yaml.safe_load((Path(__file__).parents[1] / "data" / "count_phrasings.yaml").read_text())


def reading_of(entry: dict) -> int | str:
    r = read_count(entry["answer"], SETS[entry["set"]])
    return UNREADABLE if r.status == UNREADABLE else r.value


def verdict_of(entry: dict, reading: int | str) -> str:
    if reading == UNREADABLE:
        return "unreadable"
    return "right" if reading == SETS[entry["set"]].truth else "wrong"


def test_the_corpus_is_broad_and_consistent():
    assert len(CORPUS) >= 60
    kinds = {e["kind"] for e in CORPUS}
    assert kinds == {"right", "wrong", "unreadable"}
    assert {e["set"] for e in CORPUS} == set(SETS)
    for e in CORPUS:  # each entry's kind follows from its expected reading, so the file cannot drift
        assert verdict_of(e, e["expect"]) == e["kind"], e


def test_every_phrasing_is_read_right(capsys):
    misread = []
    for e in CORPUS:
        got = reading_of(e)
        if got != e["expect"]:
            misread.append(f"{e['answer']!r}: expected {e['expect']}, read {got}")
    right = len(CORPUS) - len(misread)
    by_kind = {k: sum(1 for e in CORPUS if e["kind"] == k) for k in ("right", "wrong", "unreadable")}
    with capsys.disabled():
        print(f"\ncount-reading corpus: {right} of {len(CORPUS)} phrasings read right "
              f"({by_kind['right']} right answers, {by_kind['wrong']} wrong, {by_kind['unreadable']} unreadable)")
    assert not misread, "\n".join(misread)


@pytest.mark.parametrize("entry", CORPUS, ids=[f"{i:03d}" for i in range(len(CORPUS))])
def test_phrasing(entry):
    assert reading_of(entry) == entry["expect"]


class TestTheIssuesExamples:
    """The misreadings the issue reproduced on the old reader, one by one, with how each is read."""

    @pytest.mark.parametrize(
        "answer,qset,count",
        [
            ("8 of the 11 ids are 10 or more.", REFERENCE_SET, 8),
            ("Out of the 11 ids, 8 are 10 or more.", REFERENCE_SET, 8),
            ("Eight ids are ten or more.", REFERENCE_SET, 8),
            ("There are 8 ids ≥ 10 and 3 ids < 10.", REFERENCE_SET, 8),
            ("The count is 8, not 10.", REFERENCE_SET, 8),
            ("9 of the 19 ids are 10 or more.", STRICT_SET, 9),
        ],
    )
    def test_read_right(self, answer, qset, count):
        r = read_count(answer, qset)
        assert (r.status, r.value) == (READ, count)


class TestHowItReads:
    def test_unreadable_says_why(self):
        assert read_count("Either 8 or 9.", REFERENCE_SET).reason.startswith("hedged count")
        assert read_count("The answer is 8. There are 9 ids that are 10 or more.", REFERENCE_SET).reason == (
            "conflicting counts: 8, 9")
        assert read_count("", REFERENCE_SET).reason == "no count stated"
        assert read_count(None, REFERENCE_SET).status == UNREADABLE

    def test_the_table_size_set_aside_is_the_questions_own(self):
        # 19 is the strict set's table size, restated in passing: 9 is the count
        assert read_count("There are 19 ids. I count 9.", STRICT_SET).value == 9
        # the reference set has 11 ids, so for it 19 and 9 are two counts that conflict
        assert read_count("There are 19 ids. I count 9.", REFERENCE_SET).reason == "conflicting counts: 19, 9"

    def test_reasoning_blocks_are_dropped_unless_they_are_all_there_is(self):
        assert "11" not in normalize("<thinking>11 ids</thinking>There are 8.")
        assert "8" in normalize("<thinking>There are 8.</thinking>")
        assert read_count("<thinking>I count 8 ids that are 10 or more.</thinking>", REFERENCE_SET).value == 8

    def test_number_words_but_not_every_one(self):
        assert normalize("Twenty-one ids, eight of them") == "21 ids, 8 of them"
        assert normalize("one of the ids") == "one of the ids"
        assert normalize("There is one id.") == "There is 1 id."

    def test_any_text_is_read_or_declared_unreadable(self):
        for text in ("{", "|||", "```", "10" * 500, "<thinking>", "\u2265\u2264", "- \n1. \n2. "):
            assert read_count(text, REFERENCE_SET).status in (READ, UNREADABLE)
