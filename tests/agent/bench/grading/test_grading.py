"""Grading of the counting demo on recorded and crafted transcripts, both question sets."""

from __future__ import annotations

import pytest

from agent.bench.grading.counting import grade_counting, judge_call
from agent.bench.tasks.reference import OPS, REFERENCE_SET, STRICT_SET, select_ids

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
    """Answers the reference recorded (docs/reference-run.md, "The workload the benchmark copies")."""

    def test_engine_answer(self):
        g = grade_counting(REF, "engine", "The number of ids that are 10 or more is 8.", [call(">=", 10)])
        assert g.correct and g.quoted == 8 and g.right_filter is True and g.first_call_right is True
        assert g.filters == ("id >= 10",) and not g.invalid_calls and not g.text_tool_calls

    def test_g5g_rows_answer(self):
        answer = "The ids that are 10 or more are 20, 21, 22, 23, 10, 11, 12, and 13. There are 8 such ids."
        g = grade_counting(REF, "rows", answer, [{"name": "list_ids", "input": {}}])
        assert g.correct and g.right_filter is None and not g.invalid_calls

    def test_stock_e2b_invalid_ops_before_the_valid_one(self):
        calls = [call("greater_or_equal", 10), call("gte", 10), call(">=", 10)]
        g = grade_counting(REF, "engine", "There are 8 ids that are 10 or more.", calls)
        assert g.correct and g.right_filter and g.first_call_right is False and g.distinct_filters == 1
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
        assert not g.correct and g.verdict == "wrong" and g.right_filter

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


class TestRightFilter:
    """The call the answer relied on (the last valid one) is graded, not any call."""

    def test_sprayed_thresholds_answered_from_another_call(self):
        # the right filter was tried first, but the answer comes from the last call (id > 10, count 7)
        g = grade_counting(REF, "engine", "There are 7 ids above 10.", [call(">=", 10), call(">", 10)])
        assert g.right_filter is False and g.first_call_right is True and g.last_filter == "id > 10"
        assert g.distinct_filters == 2 and g.verdict == "wrong"

    def test_wrong_first_then_right(self):
        g = grade_counting(REF, "engine", "8", [call(">", 10), call("==", 10), call(">=", 10)])
        assert g.right_filter is True and g.first_call_right is False and g.distinct_filters == 3

    def test_an_invalid_last_call_is_not_the_one_relied_on(self):
        g = grade_counting(REF, "engine", "8", [call(">=", 10), call("gte", 10)])
        assert g.right_filter is True and g.last_filter == "id >= 10" and len(g.invalid_calls) == 1

    def test_the_same_filter_twice_is_one_filter(self):
        g = grade_counting(STRICT, "engine", "9", [call(">=", 10), call(">=", 10)])
        assert g.distinct_filters == 1 and g.right_filter

    def test_no_valid_call_is_no_right_filter(self):
        g = grade_counting(REF, "engine", "8", [call("gte", 10)])
        assert g.right_filter is False and g.first_call_right is False and g.last_filter is None
        assert grade_counting(REF, "engine", "8", []).right_filter is False

    def test_rows_mode_has_no_filter_grade(self):
        g = grade_counting(REF, "rows", "There are 8.", [{"name": "list_ids", "input": {}}])
        assert g.right_filter is None and g.first_call_right is None and g.correct


class TestFailedRuns:
    """A failed run is a failure, never a graded answer."""

    def test_an_empty_200_reply_is_a_failure_not_a_wrong_answer(self):
        for answer in ("", "   \n", None):
            g = grade_counting(REF, "engine", answer, [call(">=", 10)])
            assert g.verdict == "failed" and g.failure == "empty reply: the model returned no text"
            assert g.right_filter is None and g.first_call_right is None and not g.correct

    def test_a_timed_out_run_earns_no_right_filter(self):
        g = grade_counting(REF, "engine", "", [call(">=", 10)], error="timeout after 300.0 s")
        assert g.verdict == "failed" and g.right_filter is None and g.failure == "timeout after 300.0 s"
        assert g.last_filter == "id >= 10"  # what it did is still on record

    def test_an_error_fails_the_run_even_with_text(self):
        g = grade_counting(REF, "engine", "There are 8.", [call(">=", 10)], error="max_tokens: reached")
        assert g.verdict == "failed" and not g.correct


class TestTextToolCalls:
    """One per call written as text instead of being made."""

    def test_a_json_text_call_counts_once(self):
        json_text = '{"name": "count_ids", "arguments": {"op": ">=", "value": 10}}'
        g = grade_counting(REF, "engine", json_text, [])
        assert len(g.text_tool_calls) == 1 and g.text_tool_calls[0].arguments == {"op": ">=", "value": 10}
        wrapped = f"<tool_call>{json_text}</tool_call>"
        assert len(grade_counting(REF, "engine", wrapped, []).text_tool_calls) == 1

    def test_a_call_made_and_then_described_is_not_charged(self):
        answer = 'I called count_ids(op=">=", value=10) and it returned 8, so there are 8.'
        g = grade_counting(REF, "engine", answer, [call(">=", 10)])
        assert g.text_tool_calls == () and len(g.text_calls) == 1 and g.correct
        # the constrained rig's plain-text history, parroted back
        parrot = 'I called the tool count_ids with {"op": ">=", "value": 10}. The tool returned: {"count": 8}'
        assert grade_counting(REF, "engine", parrot, [call(">=", 10)]).text_tool_calls == ()

    def test_a_different_call_written_after_a_real_one_is_charged(self):
        answer = 'There are 8. Let me also check count_ids(op=">", value=9).'
        g = grade_counting(REF, "engine", answer, [call(">=", 10)])
        assert len(g.text_tool_calls) == 1 and g.text_tool_calls[0].arguments == {"op": ">", "value": 9}

    def test_two_calls_written_are_two(self):
        g = grade_counting(REF, "engine", "8", [], texts=['count_ids(">=", 10)', "count_ids(op='>', value=9)", "8"])
        assert len(g.text_tool_calls) == 2

    def test_gemma_4_calls_in_the_text(self):
        # what a failed vLLM tool parser leaves in Gemma 4's content, with and without special tokens
        native = '<|tool_call>call:count_ids{op:<|"|>>=<|"|>,value:10}<tool_call|>'
        g = grade_counting(REF, "engine", native, [])
        assert len(g.text_tool_calls) == 1 and g.text_tool_calls[0].arguments == {"op": ">=", "value": 10}
        assert len(grade_counting(REF, "engine", 'call:count_ids{op:<|"|>>=<|"|>,value:10}', []).text_tool_calls) == 1
        assert grade_counting(REF, "engine", native, [call(">=", 10)]).text_tool_calls == ()  # a description
        two = native + '<|tool_call>call:count_ids{op:<|"|>><|"|>,value:9}<tool_call|>'
        assert len(grade_counting(REF, "engine", two, []).text_tool_calls) == 2

    def test_the_usual_markers(self):
        for text in ("[TOOL_CALLS] [{\"name\": \"count_ids\", \"arguments\": {\"op\": \">=\", \"value\": 10}}]",
                     "```tool_code\ncount_ids(op='>=', value=10)\n```", "<tool_call>list_ids</tool_call>",
                     '<|python_tag|>{"name": "count_ids", "parameters": {"op": ">=", "value": 10}}'):
            assert len(grade_counting(REF, "engine", text, []).text_tool_calls) == 1, text


class TestOddOutput:
    @pytest.mark.parametrize(
        "answer,verdict",
        [("", "failed"), ("   ", "failed"), (None, "failed"), ("I could not find out.", "unreadable"),
         ("The answer is 7.", "wrong"), ("Eight.", "correct"), ("**8**", "correct"), ("8 or 9", "unreadable")],
    )
    def test_answers_graded_for_what_they_are(self, answer, verdict):
        g = grade_counting(REF, "engine", answer, [])
        assert g.verdict == verdict and g.correct is (verdict == "correct")

    def test_zero_usage_and_garbage_calls_never_crash(self):
        g = grade_counting(REF, "engine", "8", [{"name": None, "input": None}, {}, {"name": "count_ids"}])
        assert len(g.invalid_calls) == 3
