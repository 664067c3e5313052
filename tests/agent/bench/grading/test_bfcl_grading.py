"""BFCL cases, tool definitions and grading: the sample, the conversions, and BFCL's checker run
with what this project installs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.bench.tasks import bfcl_cases
from agent.bench.tasks.bfcl_cases import ALL_CASES, CATEGORIES, allocate, load_cases, sample_cases
from agent.bench.grading.bfcl_grading import decode_calls, grade, text_call
from agent.bench.clients.bedrock import converse_args
from agent.bench.clients.constrained import calls_schema
from agent.bench.clients.openai_wire import chat_body
from agent.bench.clients.reply import ChatRequest
from agent.bench.grading.text_calls import find_text_calls
from agent.bench.parts.bfcl import tools_of


def openai_tools(functions):
    request = ChatRequest.user("q", 8, tools=tools_of(functions))
    return chat_body(request)["tools"]


def bedrock_tool_config(functions):
    request = ChatRequest.user("q", 8, tools=tools_of(functions))
    return converse_args(request, "m")["toolConfig"]

from tests.agent.bench.fakes.bfcl_answers import truth_calls

from tests.agent.bench.fakes.bfcl_answers import wrong_answer

ROOT = Path(__file__).resolve().parents[4]


def record(case, calls, text="", **extra):
    return {"category": case.category, "functions": case.functions, "ground_truth": case.ground_truth,
            "calls": [{"name": n, "arguments": json.dumps(a) if not isinstance(a, str) else a} for n, a in calls],
            "text": text, "error": None, **extra}


def case(case_id: str):
    category = next(c for c in CATEGORIES if case_id.rsplit("_", 1)[0] in (c, f"{c}_python"))
    return next(c for c in load_cases()[category] if c.id == case_id)


# --- the cases and the sample -------------------------------------------------------------------


def test_the_five_categories_hold_the_non_live_python_cases():
    cases = load_cases()
    assert {c: len(v) for c, v in cases.items()} == {
        "simple": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200, "irrelevance": 240}
    assert all(c.ground_truth for v in cases.values() for c in v if c.category != "irrelevance")
    assert all(c.ground_truth is None for c in cases["irrelevance"])


def test_the_pin_in_the_install_file_is_the_one_the_code_names():
    lines = [ln for ln in (ROOT / "requirements-bfcl.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines == [f"bfcl-eval=={bfcl_cases.PINNED_VERSION}"]
    assert "--no-deps -r requirements-bfcl.txt" in (ROOT / "scripts" / "setup").read_text()


def test_the_sample_is_stratified_seeded_and_the_same_on_every_call():
    sample = sample_cases(200, 7)
    assert len(sample) == 200
    assert {c: sum(1 for s in sample if s.category == c) for c in CATEGORIES} == dict.fromkeys(CATEGORIES, 40)
    assert [c.id for c in sample_cases(200, 7)] == [c.id for c in sample]
    assert [c.id for c in sample_cases(200, 8)] != [c.id for c in sample]
    assert len({c.id for c in sample}) == 200


def test_all_means_every_case_and_a_small_category_passes_its_share_on():
    assert len(sample_cases(None, 0)) == ALL_CASES
    assert allocate(1100, {"simple": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200,
                           "irrelevance": 240}) == {"simple": 260, "multiple": 200, "parallel": 200,
                                                    "parallel_multiple": 200, "irrelevance": 240}  # fmt: skip
    assert allocate(3, dict.fromkeys(CATEGORIES, 10)) == {"simple": 1, "multiple": 1, "parallel": 1,
                                                          "parallel_multiple": 0, "irrelevance": 0}
    assert sum(allocate(5000, dict.fromkeys(CATEGORIES, 10)).values()) == 50


def test_a_missing_package_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(bfcl_cases, "PACKAGE", "bfcl_eval_that_is_not_installed")
    load_cases.cache_clear()
    try:
        with pytest.raises(bfcl_cases.BfclUnavailableError, match="pip install --no-deps bfcl-eval=="):
            load_cases()
    finally:
        monkeypatch.undo()
        load_cases.cache_clear()


# --- tool definitions -------------------------------------------------------------------------------


def test_openai_tools_replace_dots_and_map_bfcl_types_as_bfcl_does():
    c = case("simple_python_1")  # math.factorial(number: integer)
    (tool,) = openai_tools(c.functions)
    assert tool["type"] == "function" and tool["function"]["name"] == "math_factorial"
    assert tool["function"]["parameters"]["type"] == "object"  # BFCL writes "dict"
    assert c.functions[0]["name"] == "math.factorial" and c.functions[0]["parameters"]["type"] == "dict"  # unchanged
    floats = [t for c in load_cases()["parallel_multiple"] for t in openai_tools(c.functions)
              if any(p.get("format") == "float" for p in t["function"]["parameters"]["properties"].values())]
    prop = next(p for p in floats[0]["function"]["parameters"]["properties"].values() if p.get("format") == "float")
    assert prop["type"] == "number" and prop["description"].endswith("This is a float type value.")
    types = {p["type"] for c in sample_cases(None, 0) for t in openai_tools(c.functions)
             for p in t["function"]["parameters"]["properties"].values()}
    assert types <= {"integer", "number", "string", "boolean", "array", "object"}


def test_bedrock_tool_config_carries_the_same_schema_under_tool_spec():
    c = case("parallel_multiple_0")
    config = bedrock_tool_config(c.functions)
    assert config["toolChoice"] == {"auto": {}}
    tools = openai_tools(c.functions)
    assert [t["toolSpec"]["name"] for t in config["tools"]] == [t["function"]["name"] for t in tools]
    assert config["tools"][0]["toolSpec"]["inputSchema"]["json"] == tools[0]["function"]["parameters"]


def test_the_constrained_schema_allows_no_call_and_only_offered_names():
    c = case("parallel_multiple_1")
    schema = calls_schema(tools_of(c.functions))
    options = schema["properties"]["calls"]["items"]["anyOf"]
    assert [o["properties"]["name"]["const"] for o in options] == [t["function"]["name"]
                                                                   for t in openai_tools(c.functions)]
    assert "minItems" not in schema["properties"]["calls"]  # an empty list is how it declines (irrelevance)
    assert all("format" not in p for o in options for p in o["properties"]["arguments"]["properties"].values())


# --- grading ------------------------------------------------------------------------------------------


def test_the_checker_runs_without_bfcls_model_handlers():
    """BFCL's checker module imports its handler registry, which imports every vendor SDK; the
    registry is replaced before the import, so no handler (and no SDK) is ever loaded."""
    code = ("import json, sys\n"
            "from agent.bench.grading.bfcl_grading import checker\n"
            "checker()\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('bfcl_eval.model_handler', "
            "'anthropic', 'openai', 'numpy')))))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def test_every_ground_truth_answer_is_graded_right():
    """The scripted server's ground-truth calls, through the same conversion (dots to underscores,
    arguments as JSON), pass BFCL's checker on every one of the 1,000 relevant cases."""
    wrong = []
    for c in sample_cases(None, 0):
        calls, text = ([], "No function fits.") if c.category == "irrelevance" else (truth_calls(c), "")
        g = grade(record(c, calls, text))
        if not g.correct:
            wrong.append((c.id, g.reason))
    assert wrong == []


def test_every_deliberately_wrong_answer_is_graded_wrong_with_its_outcome():
    outcomes = {}
    for c in sample_cases(None, 0):
        calls, text = wrong_answer(c)
        g = grade(record(c, calls, text))
        outcomes[g.outcome] = outcomes.get(g.outcome, 0) + 1
        assert g.correct is False, c.id
        if g.outcome == "missed_call":
            assert g.text_call and "(x=1)" in g.text_call
    assert outcomes == {"wrong_call": 500, "missed_call": 500, "spurious_call": 240}


def test_a_wrong_value_is_refused_with_the_checkers_reason():
    c = case("simple_python_1")
    g = grade(record(c, [("math_factorial", {"number": 6})]))
    assert g.outcome == "wrong_call" and "Invalid value for parameter 'number'" in g.reason


def test_an_unmatched_parallel_call_says_why():
    c = case("parallel_0")  # spotify.play twice: Taylor Swift 20, Maroon 5 15
    g = grade(record(c, [("spotify_play", {"duration": 20}), ("spotify_play", {"artist": "Maroon 5", "duration": 15})]))
    assert g.outcome == "wrong_call" and g.reason.endswith("(Missing required parameter: 'artist'.)")


def test_a_dotted_name_is_not_the_offered_tool_name():
    g = grade(record(case("simple_python_1"), [("math.factorial", {"number": 5})]))
    assert g.outcome == "wrong_call" and "not found" in g.reason


def test_undecodable_arguments_are_wrong_except_on_irrelevance_where_bfcl_counts_no_call():
    g = grade(record(case("simple_python_1"), [("math_factorial", '{"number": 5')]))
    assert g.outcome == "wrong_call" and "not JSON" in g.reason
    irrelevant = case("irrelevance_0")
    g = grade(record(irrelevant, [(irrelevant.functions[0]["name"], "[1, 2]")]))
    assert g.outcome == "correct" and "counts as no call" in g.reason
    g = grade(record(irrelevant, [(irrelevant.functions[0]["name"], {})]))
    assert g.outcome == "spurious_call" and g.correct is False


def test_a_failed_request_is_an_error_never_a_grade():
    g = grade({**record(case("simple_python_1"), []), "error": "HTTP 500: boom"})
    assert (g.outcome, g.correct, g.reason) == ("error", None, "HTTP 500: boom")


TEXT_CALLS = [
    "I'll use math.factorial(number=5) for that.",
    "math_factorial(5)",
    '{"name": "math_factorial", "arguments": {"number": 5}}',
    "<tool_call>\n{\"name\": \"math_factorial\"}\n</tool_call>",
    "<|tool_call>call:math_factorial{number:5}<tool_call|>",
    '<function=math_factorial>{"number": 5}</function>',
    '{"tool_calls": [{"function": {"name": "math_factorial", "arguments": "{\\"number\\": 5}"}}]}',
    "[TOOL_CALLS] [{\"name\": \"math_factorial\", \"arguments\": {\"number\": 5}}]",
]
PLAIN = ["The factorial of 5 is 120.", "You can use a math factorial function (it multiplies 1 to n).", ""]


@pytest.mark.parametrize("text", TEXT_CALLS)
def test_a_call_written_as_text_is_seen(text):
    c = case("simple_python_1")
    g = grade(record(c, [], text))
    assert g.outcome == "missed_call" and g.text_call


@pytest.mark.parametrize("text", TEXT_CALLS + PLAIN)
def test_bfcl_and_the_counting_grade_see_the_same_text_calls(text):
    """One detector: a reply is a text call in the BFCL grade exactly when the counting grade's detector
    (which also reads the orchestrator's and the quality lane's replies) finds one."""
    names = ["math.factorial", "math_factorial"]
    assert (text_call(text, case("simple_python_1").functions) is not None) == bool(find_text_calls([text], [], names))


@pytest.mark.parametrize("text", PLAIN)
def test_plain_answers_are_not_text_calls(text):
    assert text_call(text, case("simple_python_1").functions) is None


def test_calls_made_through_the_interface_are_not_also_counted_as_text():
    g = grade(record(case("simple_python_1"), [("math_factorial", {"number": 5})], "Calling math_factorial(5)."))
    assert g.outcome == "correct" and g.text_call is None


def test_decode_calls_takes_strings_and_objects():
    assert decode_calls([{"name": "f", "arguments": '{"a": 1}'}, {"name": "g", "arguments": {"b": 2}},
                         {"name": "h", "arguments": ""}]) == [{"f": {"a": 1}}, {"g": {"b": 2}}, {"h": {}}]
