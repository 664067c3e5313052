"""Grading of the counting demo on recorded and crafted outputs, both question sets."""

from __future__ import annotations

import pytest

from agent.bench.grading import find_text_tool_calls, grade_counting, judge_call, stated_count
from agent.bench.workload import OPS, REFERENCE_SET, STRICT_SET, select_ids

REF, STRICT = REFERENCE_SET, STRICT_SET


def call(op, value, name="count_ids"):
    return {"name": name, "input": {"op": op, "value": value}}


class TestQuestionSets:
    def test_reference_constants_exact(self):
        assert REF.ids == (0, 2, 3, 20, 21, 22, 23, 10, 11, 12, 13)
        assert REF.question == "How many of the ids are 10 or more? Answer with the number."
        assert REF.truth == 8
        assert set(OPS) == {">=", ">", "<=", "<", "=="}

    def test_strict_set_has_boundary_ids_on_both_sides_of_every_threshold(self):
        for v in range(0, 15):
            assert v in STRICT.ids
        assert STRICT.truth == 9 != REF.truth

    def test_only_the_exact_predicate_selects_the_strict_truth(self):
        passing = {(op, v) for op in OPS for v in range(-2, 30) if select_ids(STRICT.ids, op, v) == STRICT.truth_ids}
        assert passing == {(">=", 10), (">", 9)}  # the same predicate on integers

    def test_the_reference_set_has_the_loophole(self):
        passing = {(op, v) for op in OPS for v in range(-2, 30) if select_ids(REF.ids, op, v) == REF.truth_ids}
        assert (">", 3) in passing and (">=", 4) in passing and (">=", 10) in passing
        assert len(passing) == 14  # id >= 4..10 and id > 3..9


class TestRecordedAnswers:
    """Answers the reference recorded (SYSTEM.md 10.1)."""

    def test_engine_answer(self):
        g = grade_counting(REF, "engine", "The number of ids that are 10 or more is 8.", [call(">=", 10)])
        assert g.correct and g.quoted == 8 and g.right_filter is True
        assert g.filters == ("id >= 10",) and not g.invalid_calls and not g.text_tool_calls

    def test_g5g_rows_answer(self):
        answer = "The ids that are 10 or more are 20, 21, 22, 23, 10, 11, 12, and 13. There are 8 such ids."
        g = grade_counting(REF, "rows", answer, [{"name": "list_ids", "input": {}}])
        assert g.correct and g.right_filter is None and not g.invalid_calls

    def test_stock_e2b_invalid_ops_before_the_valid_one(self):
        calls = [call("greater_or_equal", 10), call("gte", 10), call(">=", 10)]
        g = grade_counting(REF, "engine", "There are 8 ids that are 10 or more.", calls)
        assert g.correct and g.right_filter
        assert [c.reason for c in g.invalid_calls] == ["bad op 'greater_or_equal'", "bad op 'gte'"]
        assert len(g.calls) == 3


class TestLoopholes:
    @pytest.mark.parametrize("op,value", [(">", 3), (">=", 4), (">=", 7), (">", 9)])
    def test_loose_threshold_passes_reference_but_fails_strict(self, op, value):
        ref = grade_counting(REF, "engine", "8", [call(op, value)])
        assert ref.right_filter is True
        strict = grade_counting(STRICT, "engine", "9", [call(op, value)])
        assert strict.right_filter is ((op, value) == (">", 9))

    def test_off_by_one_filter_fails_both(self):
        assert grade_counting(REF, "engine", "7", [call(">", 10)]).right_filter is False
        assert grade_counting(STRICT, "engine", "10", [call(">=", 9)]).right_filter is False

    def test_right_count_wrong_filter(self):
        g = grade_counting(REF, "engine", "There are 8.", [call(">", 10)])
        assert g.correct and g.right_filter is False

    def test_remembered_reference_answer_fails_strict(self):
        g = grade_counting(STRICT, "engine", "There are 8 ids that are 10 or more.", [call(">=", 10)])
        assert not g.correct and g.answer_status == "wrong count" and g.right_filter

    @pytest.mark.parametrize(
        "value,reason",
        [("10", "bad type: value is str '10'"), (10.0, "bad type: value is float 10.0"),
         (True, "bad type: value is bool True"), (None, "bad type: value is NoneType None")],
    )
    def test_bad_types_are_invalid_even_if_coercible(self, value, reason):
        g = grade_counting(REF, "engine", "8", [call(">=", value)])
        assert g.right_filter is False and g.invalid_calls[0].reason == reason

    def test_missing_extra_and_unknown(self):
        v = judge_call("count_ids", {"op": ">="}, REF, "engine")
        assert not v.valid and "missing value" in v.reason
        v = judge_call("count_ids", {"op": ">=", "value": 10, "column": "id"}, REF, "engine")
        assert not v.valid and "unexpected argument" in v.reason
        v = judge_call("list_ids", {}, REF, "engine")
        assert not v.valid and "unknown tool" in v.reason
        v = judge_call("count_ids", "op>=10", REF, "engine")
        assert not v.valid and "not an object" in v.reason
        v = judge_call("count_ids", {"op": "id", "value": 10}, REF, "engine")
        assert not v.valid and v.reason == "bad op 'id'"

    def test_tool_call_written_as_text(self):
        answer = 'I will call count_ids(op=">=", value=10). The answer is 8.'
        g = grade_counting(REF, "engine", answer, [])
        assert g.correct and g.right_filter is False and len(g.text_tool_calls) == 1
        json_text = '{"name": "count_ids", "arguments": {"op": ">=", "value": 10}}'
        assert grade_counting(REF, "engine", json_text, []).text_tool_calls
        assert find_text_tool_calls(["<tool_call>list_ids</tool_call>"])

    def test_text_calls_in_earlier_turns_are_found(self):
        g = grade_counting(REF, "engine", "8", [], texts=["count_ids(>=, 10)", "8"])
        assert len(g.text_tool_calls) == 1


class TestOddOutput:
    @pytest.mark.parametrize(
        "answer,status",
        [("", "empty"), ("   ", "empty"), (None, "empty"), ("I could not find out.", "no number"),
         ("The answer is 7.", "wrong count"), ("Eight.", "correct"), ("**8**", "correct")],
    )
    def test_answers_graded_for_what_they_are(self, answer, status):
        g = grade_counting(REF, "engine", answer, [])
        assert g.answer_status == status and g.correct is (status == "correct")

    def test_error_with_no_answer(self):
        g = grade_counting(REF, "engine", "", [call(">=", 10)], error="max_tokens: reached")
        assert g.answer_status == "error" and not g.correct and g.right_filter is True

    def test_zero_usage_and_garbage_calls_never_crash(self):
        g = grade_counting(REF, "engine", "8", [{"name": None, "input": None}, {}, {"name": "count_ids"}])
        assert len(g.invalid_calls) == 3


class TestStatedCount:
    @pytest.mark.parametrize(
        "answer,count",
        [
            ("The number of ids that are 10 or more is 8.", 8),
            ("There are 8 ids that are 10 or more.", 8),
            ("There are 8 such ids: 10, 11, 12, 13, 20, 21, 22, 23.", 8),
            ("count_ids(op='>=', value=10) returned 8", 8),
            ('{"where": "id >= 10", "count": 8, "min": 10, "max": 23}', 8),
            ("Using id > 9 gives 8 ids (10-23).", 8),
            ("There are 9 ids greater than 10... no wait, the count is 8.", 8),
            ("There are 7 ids above 10.", 7),
            ("I do not know.", None),
        ],
    )
    def test_cases(self, answer, count):
        assert stated_count(answer) == count
