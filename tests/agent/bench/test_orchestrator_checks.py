"""The orchestrator checks on crafted replies: wrong winner, re-typed table, unasked backend."""

from __future__ import annotations

from agent.bench.orchestrator import (
    ask_result, check_reply, claimed_winner, measured_winner, scoreboard_table, table_quote, tool_name,
)

BACKENDS = [
    {"name": "bedrock", "label": "Amazon Bedrock"},
    {"name": "g6", "label": "vLLM on EC2 g6 (L4)"},
    {"name": "trn1", "label": "Trainium (trn1, hand-ported)"},
    {"name": "inf2", "label": "Inferentia2 (inf2, hand-ported)"},
]
# Demo 2, run 1, run 2 of the reference (SYSTEM.md 14.3): the table put g6 first.
ASKS = [
    {"backend": "g6", "label": "vLLM on EC2 g6 (L4)", "answer": "Paris", "seconds": 0.154, "tokens_per_second": 13.0},
    {"backend": "trn1", "label": "Trainium (trn1, hand-ported)", "answer": "Paris", "seconds": 0.196,
     "tokens_per_second": 5.1},
    {"backend": "bedrock", "label": "Amazon Bedrock", "answer": "Paris", "seconds": 0.51, "tokens_per_second": 3.9},
]
TABLE = scoreboard_table(ASKS)


def test_scoreboard_is_sorted_fastest_first_with_error_rows_last():
    rows = TABLE.splitlines()
    assert rows[0] == "| backend | answer | seconds | tokens/s |"
    assert rows[2].startswith("| vLLM on EC2 g6 (L4) | Paris | 0.154 |")
    table = scoreboard_table(ASKS + [{"backend": "inf2", "label": "Inferentia2", "error": "timeout"}])
    assert table.splitlines()[-1] == "| Inferentia2 | ERROR timeout | - | - |"
    assert measured_winner(ASKS) == "g6"


def test_wrong_winner_is_flagged():
    reply = TABLE + "\n\nThe fastest response came from the Trainium (trn1, hand-ported) backend."
    result = check_reply(reply, ASKS, [TABLE], BACKENDS)
    assert result["winner_claimed"] == "trn1" and result["winner_measured"] == "g6"
    assert result["wrong_winner"] is True
    assert result["table_quote"] == "exact" and result["table_matches"]


def test_right_winner_and_no_winner():
    right = check_reply(TABLE + "\nThe fastest was g6.", ASKS, [TABLE], BACKENDS)
    assert right["winner_claimed"] == "g6" and not right["wrong_winner"]
    none = check_reply(TABLE + "\nAll backends answered Paris.", ASKS, [TABLE], BACKENDS)
    assert none["winner_claimed"] is None and not none["wrong_winner"]


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
    assert claimed_winner(reply, BACKENDS) is None


def test_tool_names_and_ask_results():
    assert tool_name("my-rig.1") == "ask_my_rig_1"
    rec = {"backend": "g6", "done_ms": 150.0, "output_tokens": 2, "text": " Paris\n", "error": None}
    assert ask_result(rec, "g6 label") == {"backend": "g6", "label": "g6 label", "answer": "Paris", "seconds": 0.15,
                                           "tokens_per_second": 13.3}
    assert ask_result({**rec, "error": "HTTP 500: x"}, "L")["error"] == "HTTP 500: x"
