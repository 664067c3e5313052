"""``python -m agent.run`` with bad numbers and a bad ``--out``: one line naming the problem, exit
status 2, nothing started and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent import run as run_module
from agent.bench.command import declared

from tests.agent.conftest import FakeRunner


@pytest.mark.parametrize(
    "argv,says",
    [
        (["--request-timeout", "0"], "argument --request-timeout: 0 is not a usable number of seconds: give a finite number above 0"),
        (["--request-timeout", "-1"], "argument --request-timeout: -1 is not a usable number of seconds: give a finite number above 0"),
        (["--request-timeout", "nan"], "argument --request-timeout: nan is not a usable number of seconds: give a finite number above 0"),
        (["--request-timeout", "inf"], "argument --request-timeout: inf is not a usable number of seconds: give a finite number above 0"),
        (["--request-timeout", "soon"], "argument --request-timeout: 'soon' is not a number of seconds"),
        (["--max-tokens", "0"], "argument --max-tokens: 0 is too small: give at least 1"),
        (["--max-tokens", "-5"], "argument --max-tokens: -5 is too small: give at least 1"),
        (["--max-tokens", "1e3"], "argument --max-tokens: '1e3' is not a whole number"),
        (["--runs", "0"], "argument --runs: 0 is too small: give at least 1"),
        (["--runs", "two"], "argument --runs: 'two' is not a whole number"),
        (["--ready-timeout", "nan"], "argument --ready-timeout: nan is not a usable number of seconds: give a finite number above 0"),
        (["--concurrency", "0,4"], "argument --concurrency: concurrency levels must be at least 1"),
        (["--concurrency", "1,100000000"], "argument --concurrency: 100000000 is above 1024: each request in flight "
                                           "holds a connection (and, for AWS backends, a worker thread)"),
        (["--max-consecutive-failures", "-1"], "argument --max-consecutive-failures: -1 is negative: give 0 or more"),
        (["--rate", "0"], "argument --rate: 0 is not a usable rate: give requests per second above 0, or peak"),
        (["--rate", "fast"], "argument --rate: 'fast' is not a rate: give requests per second (e.g. 2.5) or peak"),
        (["--rate", "5000"], "argument --rate: 5000 is above 1,000 requests per second, more than one sender's "
                             "timers can keep to schedule"),
        (["--rate", "2", "--rate-duration", "0"],
         "argument --rate-duration: 0 is not a usable number of seconds: give a finite number above 0"),
        (["--workload", "arrival=bursty"],
         "argument --workload: arrival: 'bursty' is not one of constant, poisson, gamma"),
        (["--workload", "burstiness=0.5"], "argument --workload: burstiness: only arrival=gamma has a shape (arrival "
                                           "is poisson); add arrival=gamma or leave burstiness out"),
        (["--workload", "arrival=gamma,burstiness=0"],
         "argument --workload: burstiness must be more than 0 (1 is Poisson)"),
        (["--workload", "request_rate=-2"], "argument --workload: request_rate must be more than 0"),
        (["--demos", "bfcl", "--bfcl-n", "99999"], "argument --bfcl-n: 99,999 is above the 1,240 cases there are: "
                                                   "give at most 1,240, or 'all'"),
        (["--question", ""], "argument --question: empty: give the text"),
        (["--question", "  "], "argument --question: empty: give the text"),
    ],
)
def test_a_bad_number_is_one_line_and_exit_2(argv: list[str], says: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as done:
        run_module.main(argv, env={})
    assert done.value.code == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert captured.out == "" and len(err) == 1, err
    assert err[0] == f"python -m agent.run: error: {says} (see --help)"


@pytest.mark.parametrize(
    "argv,says",
    [
        (["--demos", "counting", "--concurrency", "auto"],
         "--concurrency auto searches the chat part's capacity, and --demos counting has no chat: add chat to "
         "--demos, or leave --concurrency out"),
        (["--demos", "counting,orchestrator", "--slo", "ttft_p99_ms=500"],
         "--slo only changes the chat part, and --demos counting,orchestrator has no chat: add chat to --demos, "
         "or leave it out"),
        (["--bfcl-n", "50", "--bfcl-stream"],
         "--bfcl-n, --bfcl-stream only change the bfcl part, and --demos counting,orchestrator,chat has no bfcl: "
         "add bfcl to --demos, or leave them out"),
        (["--rate-duration", "30"], "--rate-duration sets the open loop's window, and the open loop runs with "
                                    "--rate R|peak: give --rate, or leave --rate-duration out"),
        (["--demos", "chat,open_loop"], "--demos open_loop sends requests at a rate, and none is given: add --rate "
                                        "R|peak, or take open_loop out of --demos"),
        (["--demos", "counting", "--rate", "peak"],
         "--rate peak sizes the rate from the chat part's SLO capacity, and --demos counting has no chat: add chat "
         "to --demos, or give --rate R (requests per second)"),
    ],
)
def test_an_option_its_part_will_not_read_is_refused_with_the_fix(argv: list[str], says: str,
                                                                   capsys: pytest.CaptureFixture) -> None:
    """Given without its part in --demos, an option would change nothing: it is refused before anything
    starts, instead of ignored."""
    with pytest.raises(SystemExit) as done:
        run_module.main(argv, env={})
    err = capsys.readouterr().err.strip().splitlines()
    assert done.value.code == 2 and err == [f"python -m agent.run: error: {says} (see --help)"]


def test_options_with_their_part_are_accepted() -> None:
    from agent.bench.command import runner

    parser = run_module.build_parser(runner)
    for argv in (["--demos", "chat", "--concurrency", "auto", "--slo", "ttft_p99_ms=500"],
                 ["--demos", "bfcl", "--bfcl-n", "all"], ["--demos", "bfcl", "--bfcl-n", "1240"], []):
        runner.check_options(parser.parse_args(argv))


def test_out_naming_a_file_is_one_line(fake_runner: FakeRunner, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    code = run_module.main(["--backends", "g6", "--out", str(target)], env={"G6_URL": "http://127.0.0.1:9/v1"})
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and fake_runner.calls == [] and target.read_text() == "mine"
    assert err == [f"error: --out: {target} is a file: give a folder (new or empty) for the evidence"]


def test_out_holding_another_runs_evidence_is_refused(fake_runner: FakeRunner, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "requests.jsonl").write_text(json.dumps({"seq": 1, "part": "chat"}) + "\n")
    (tmp_path / "run.json").write_text("{}")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code = run_module.main(["--backends", "g6", "--out", str(tmp_path)], env={"G6_URL": "http://127.0.0.1:9/v1"})
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and fake_runner.calls == []
    assert len(err) == 1 and "already holds a run's evidence (requests.jsonl, run.json)" in err[0]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_parsed_options_are_the_parsers_own_answer(capsys: pytest.CaptureFixture) -> None:
    """What the rehearsal asks instead of reading ``--bench-options`` by hand: the options given, by their long
    name (abbreviations and ``--opt=value`` included), and those the run would use, defaults in."""
    assert run_module.main(["--parsed-options", "--ou", "x", "--quality-n=5", "--dem", "chat,quality"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["given"] == ["--out", "--demos", "--quality-n"]
    assert answer["options"]["demos"] == ["chat", "quality"] and answer["options"]["quality_n"] == 5
    assert answer["options"]["runs"] == declared.OPTION["runs"].default  # not given: the run's default
    assert run_module.main(["--parsed-options"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["given"] == [] and answer["workload_context_tokens"] is None  # the reference's one prompt


def test_parsed_options_give_the_context_a_server_needs_for_the_workload(capsys: pytest.CaptureFixture) -> None:
    """1,000 + 200 tokens a request: 1,200, rounded up to 1,280; the default parts' agents ask for 4,096."""
    workload = ["--workload", "prompt_input_tokens_mean=1000,output_tokens_mean=200"]
    assert run_module.main(["--parsed-options", *workload]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert (answer["workload_context_tokens"], answer["server_context_tokens"]) == (1280, 4096)
    assert run_module.main(["--parsed-options", "--demos", "chat,quality", *workload]) == 0
    assert json.loads(capsys.readouterr().out)["server_context_tokens"] == 1280
