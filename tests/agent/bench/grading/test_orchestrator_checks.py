"""The orchestrator checks on crafted replies and records: the structured answer against the
scoreboard, the free-text winner, disagreement, failed runs, re-typed tables, unasked backends."""

from __future__ import annotations

import pytest

from agent.bench.grading.orchestrator import check_orchestrator, check_reply, measured_winner, table_quote
from agent.bench.parts.orchestrator import ask_result, scoreboard_table
from agent.bench.tasks.reference import SUBMIT_TOOL, tool_name
from agent.bench.grading.winner import read_winner, resolve_backend

BACKENDS = [
    {"name": "bedrock", "label": "Amazon Bedrock"},
    {"name": "g6", "label": "vLLM on EC2 g6 (L4)"},
    {"name": "trn1", "label": "Trainium (trn1, hand-ported)"},
    {"name": "inf2", "label": "Inferentia2 (inf2, hand-ported)"},
]
# The reference's run 1, second orchestrator run (docs/reference-run.md, "Demo 2: the wrong winner"):
# the table put g6 first.
ASKS = [
    {"backend": "g6", "label": "vLLM on EC2 g6 (L4)", "answer": "Paris", "seconds": 0.154, "tokens_per_second": 13.0},
    {"backend": "trn1", "label": "Trainium (trn1, hand-ported)", "answer": "Paris", "seconds": 0.196,
     "tokens_per_second": 5.1},
    {"backend": "bedrock", "label": "Amazon Bedrock", "answer": "Paris", "seconds": 0.51, "tokens_per_second": 3.9},
]
TABLE = scoreboard_table(ASKS)
OFFERED = [{**b, "tool": tool_name(b["name"])} for b in BACKENDS]


def record(reply="", calls=(), follow_up=None, error=None, asks=ASKS, scoreboards=(TABLE,)):
    """An orchestrator record as the runner writes it."""
    return {"part": "orchestrator", "backend": "bedrock", "reply": reply, "asks": list(asks),
            "scoreboards": list(scoreboards), "offered": OFFERED, "calls": list(calls), "error": error,
            "follow_up": follow_up}


def submit(winner, table=TABLE):
    return {"name": SUBMIT_TOOL, "input": {"winner": winner, "table": table}}


def test_scoreboard_is_sorted_fastest_first_with_error_rows_last():
    rows = TABLE.splitlines()
    assert rows[0] == "| backend | answer | seconds | tokens/s |"
    assert rows[2].startswith("| vLLM on EC2 g6 (L4) | Paris | 0.154 |")
    table = scoreboard_table(ASKS + [{"backend": "inf2", "label": "Inferentia2", "error": "timeout"}])
    assert table.splitlines()[-1] == "| Inferentia2 | ERROR timeout | - | - |"
    assert measured_winner(ASKS) == "g6"


def test_free_text_naming_the_wrong_winner_is_read_as_such():
    reply = TABLE + "\n\nThe fastest response came from the Trainium (trn1, hand-ported) backend."
    result = check_reply(reply, ASKS, [TABLE], BACKENDS)
    assert result["winner_claimed"] == "trn1" and result["winner_text"] == "named"
    assert result["winner_measured"] == "g6"
    assert result["table_quote"] == "exact" and result["table_matches"]


def test_right_winner_and_no_winner():
    right = check_reply(TABLE + "\nThe fastest was g6.", ASKS, [TABLE], BACKENDS)
    assert right["winner_claimed"] == "g6"
    none = check_reply(TABLE + "\nAll backends answered Paris.", ASKS, [TABLE], BACKENDS)
    assert none["winner_claimed"] is None and none["winner_text"] == "none"


@pytest.mark.parametrize(
    "sentence,status,name",
    [
        ("Compared with Bedrock, g6 was the fastest.", "named", "g6"),  # the example: not Bedrock
        ("Compared to Amazon Bedrock, vLLM on EC2 g6 (L4) was the fastest.", "named", "g6"),
        ("g6 was faster than Bedrock and was the fastest overall.", "named", "g6"),
        ("Bedrock came in last while g6 was the fastest.", "named", "g6"),
        ("g6 was the fastest and Bedrock the slowest.", "named", "g6"),
        ("g6 responded fastest (0.154 s), followed by trn1 and Amazon Bedrock.", "named", "g6"),
        ("Bedrock won, beating g6 and trn1.", "named", "bedrock"),
        ("g6 and trn1 were the fastest.", "unclear", None),
        ("The winner is g6. Actually, trn1 was the fastest.", "unclear", None),
        ("The table above lists the fastest first.", "none", None),
        ("Everyone said Paris.", "none", None),
        ("<thinking>Maybe Bedrock was the fastest?</thinking> The fastest was g6.", "named", "g6"),
    ],
)
def test_reading_the_free_text_winner(sentence, status, name):
    assert read_winner(sentence, BACKENDS) == (status, name)


def test_resolving_a_submitted_winner():
    for value in ("g6", "G6", "ask_g6", "vLLM on EC2 g6 (L4)", "g6 (0.154 s)"):
        assert resolve_backend(value, OFFERED) == "g6", value
    for value in ("", "the L4 one", "g6 or trn1", None, 6, {"name": "g6"}):
        assert resolve_backend(value, OFFERED) is None, value


def test_unasked_backend():
    result = check_reply(TABLE, ASKS, [TABLE], BACKENDS)
    assert result["asked"] == ["bedrock", "g6", "trn1"] and result["not_asked"] == ["inf2"]


def test_retyped_header_is_retyped_not_exact():
    retyped = TABLE.replace("| backend | answer | seconds | tokens/s |", "| Backend | Answer | Seconds | Tokens/s |")
    retyped = retyped.replace("|---|---|---|---|", "|:---|:---:|---:|---|")
    assert table_quote(retyped, TABLE) == "retyped"
    result = check_reply(retyped, ASKS, [TABLE], BACKENDS)
    assert result["table_matches"] is True and result["table_quote"] == "retyped"


def test_altered_numbers_do_not_match():
    altered = TABLE.replace("0.154", "0.15")
    result = check_reply(altered, ASKS, [TABLE], BACKENDS)
    assert result["table_quote"] == "altered" and result["table_matches"] is False
    reranked = "\n".join([TABLE.splitlines()[0], TABLE.splitlines()[1], TABLE.splitlines()[3], TABLE.splitlines()[2],
                          TABLE.splitlines()[4]])
    assert table_quote(reranked, TABLE) == "altered"


def test_no_table_and_no_scoreboard_call():
    result = check_reply("Everyone said Paris.", ASKS, [], BACKENDS)
    assert result["table_quote"] == "absent" and not result["table_matches"] and not result["scoreboard_called"]
    assert check_reply("", [], [], BACKENDS)["not_asked"] == ["bedrock", "g6", "trn1", "inf2"]


def test_winner_from_table_rows_is_not_a_claim():
    reply = TABLE + "\nThe table above lists the fastest first."
    assert read_winner(reply, BACKENDS) == ("none", None)


def test_tool_names_and_ask_results():
    assert tool_name("my-rig.1") == "ask_my_rig_1"
    rec = {"backend": "g6", "done_ms": 150.0, "output_tokens": 2, "text": " Paris\n", "error": None}
    assert ask_result(rec, "g6 label") == {"backend": "g6", "label": "g6 label", "answer": "Paris", "seconds": 0.15,
                                           "tokens_per_second": 13.3}
    assert ask_result({**rec, "error": "HTTP 500: x"}, "L")["error"] == "HTTP 500: x"


class TestStructuredAnswer:
    def test_a_correct_agent_with_a_blurred_sentence_is_right(self):
        r = check_orchestrator(record(TABLE + "\nCompared with Bedrock, g6 was the fastest.", [submit("g6")]))
        assert r["winner_verdict"] == "right" and r["wrong_winner"] is False and r["text_disagrees"] is False
        assert r["winner_claimed"] == "g6" and r["submitted_table_quote"] == "exact" and r["submitted_via"] == "run"

    def test_the_references_wrong_winner_is_wrong_in_code(self):
        reply = TABLE + "\nThe fastest response came from the Trainium (trn1, hand-ported) backend."
        r = check_orchestrator(record(reply, [submit("trn1")]))
        assert r["winner_verdict"] == "wrong" and r["wrong_winner"] is True and r["winner_submitted"] == "trn1"

    def test_free_text_and_structured_answer_disagree(self):
        reply = TABLE + "\nThe fastest response came from the Trainium (trn1, hand-ported) backend."
        r = check_orchestrator(record(reply, [submit("g6")]))
        assert r["winner_verdict"] == "right" and r["text_disagrees"] is True and r["winner_claimed"] == "trn1"

    def test_a_winner_that_cannot_be_read_is_unclear_never_wrong(self):
        r = check_orchestrator(record(TABLE, [submit("the L4 one")]))
        assert r["winner_verdict"] == "unclear" and r["wrong_winner"] is False
        assert r["winner_submitted_raw"] == "the L4 one" and r["winner_submitted"] is None
        garbage = check_orchestrator(record(TABLE, [{"name": SUBMIT_TOOL, "input": "g6"}]))
        assert garbage["winner_verdict"] == "unclear" and garbage["submitted_table_quote"] == "absent"

    def test_the_last_submission_counts(self):
        r = check_orchestrator(record(TABLE, [submit("trn1"), submit("g6")]))
        assert r["winner_submitted"] == "g6" and r["winner_verdict"] == "right"

    def test_submitted_in_the_follow_up(self):
        r = check_orchestrator(record(TABLE + "\nDone.", [], follow_up={"calls": [submit("g6", "")], "error": None}))
        assert r["submitted_via"] == "follow-up" and r["winner_verdict"] == "right"
        assert r["submitted_table_quote"] == "absent"

    def test_never_submitted(self):
        r = check_orchestrator(record(TABLE + "\nThe fastest was g6.", [], follow_up={"calls": [], "error": "boom"}))
        assert r["winner_verdict"] == "not submitted" and not r["wrong_winner"] and r["failure"] is None
        assert r["follow_up_error"] == "boom" and r["winner_claimed"] == "g6"

    def test_a_retyped_submitted_table(self):
        retyped = TABLE.replace("| backend | answer | seconds | tokens/s |", "| Backend | Answer | Seconds | Tokens/s |")
        assert check_orchestrator(record(TABLE, [submit("g6", retyped)]))["submitted_table_quote"] == "retyped"

    def test_nothing_measured(self):
        failed_asks = [{"backend": "g6", "label": "g6", "error": "HTTP 500"}]
        r = check_orchestrator(record("All failed.", [submit("g6")], asks=failed_asks, scoreboards=()))
        assert r["winner_verdict"] == "no successful ask" and r["winner_measured"] is None


class TestFailedOrchestratorRuns:
    def test_an_empty_reply_with_nothing_submitted_is_a_failure(self):
        r = check_orchestrator(record("", []))
        assert r["winner_verdict"] == "failed" and r["failure"].startswith("empty reply") and not r["wrong_winner"]

    def test_an_error_is_a_failure_even_after_a_submission(self):
        r = check_orchestrator(record("", [submit("trn1")], error="timeout after 600.0 s"))
        assert r["winner_verdict"] == "failed" and r["failure"] == "timeout after 600.0 s" and not r["wrong_winner"]

    def test_an_empty_reply_after_a_submission_is_graded(self):
        r = check_orchestrator(record("", [submit("g6")]))
        assert r["winner_verdict"] == "right" and r["failure"] is None and r["winner_text"] == "none"
