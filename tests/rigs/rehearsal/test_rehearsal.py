"""``rigs rehearse``'s parts: the estimate and the rehearsal's own cost against
hand-computed values, the first answer read from the benchmark's evidence, what it destroys and
how, and the input it refuses before doing anything."""

from __future__ import annotations

import dataclasses

import io
import os
import json
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from kit import processes
from rigs import aws

from kit.command import UsageError
from rigs.catalog.model import load_catalog
from rigs.contract import REGIONS
from rigs.deploy.sequence import DeploySequence
from rigs.estate.whereabouts import Whereabouts
from rigs.placement import placement
from rigs.rehearsal import bench_options, cleanup, flow, prepare
from rigs.rehearsal import estimate as estimating
from rigs.rehearsal import timeline
from rigs.rehearsal.down import Destroyer, created_since, destroy_commands, shown
from rigs.rehearsal.state import Options, Output, Phase, State
from tests.conftest import PROJECT_DIR

G6, INF2, SAGEMAKER = 0.8048, 0.7582, 1.1267  # $/h, rigs/prices.yaml
CATALOG = load_catalog()


def state(options: Options, folder: Path, out: io.StringIO) -> State:
    return State(options, CATALOG, folder, Output(out))


def plan(rig: str, phase: str, ready: int, usd: float | None, hours: float = 4) -> estimating.PhasePlan:
    return estimating.PhasePlan(rig=rig, phase=phase, region="us-east-2", instance_type="t", model_id="m",
                                ready_timeout_minutes=ready, max_hours=hours, usd_per_hour=usd)


def test_the_estimate_is_the_longest_wait_plus_allowances_times_every_rigs_price():
    result = estimating.estimate([plan("g6", "small", 40, G6), plan("inf2", "small", 40, INF2),
                                  plan("sagemaker", "small", 40, SAGEMAKER)])
    # 40 + 20 + 10 = 70 minutes; (0.8048 + 0.7582 + 1.1267) x 70 / 60 = 3.137983...
    assert result.minutes == 70
    assert result.usd == pytest.approx(3.1379833, abs=1e-6)
    assert result.backstop_usd == pytest.approx(2.6897 * 4)  # each rig until its 4 h lifetime limit


def test_big_adds_a_phase_with_the_variants_wait_for_the_rigs_that_have_one():
    result = estimating.estimate([plan("g6", "small", 40, G6), plan("inf2", "small", 45, INF2),
                                  plan("g6", "big", 50, G6), plan("sagemaker", "big", 50, SAGEMAKER, hours=2)],
                                 benchmark_minutes=15, destroy_minutes=5)
    small, big = result.phases
    assert (small.ready_minutes, small.minutes) == (45, 65)  # the slowest rig of the phase sets its length
    assert small.usd == pytest.approx((G6 + INF2) * 65 / 60)  # 1.693266...
    assert (big.rigs, big.minutes) == (("g6", "sagemaker"), 70)
    assert big.usd == pytest.approx((G6 + SAGEMAKER) * 70 / 60)  # 2.253416...
    assert result.minutes == 135 and result.usd == pytest.approx(3.9466667, abs=1e-6)  # 1.69325 + 2.2534167
    assert result.backstop_usd == pytest.approx(G6 * 4 + INF2 * 4 + G6 * 4 + SAGEMAKER * 2)
    assert estimating.duration(result.minutes) == "2 h 15 min"


def test_the_quality_lane_adds_each_rigs_allowance_to_the_phase_every_rig_bills_for():
    # 600 items: a Neuron rig one at a time at 0.8 s each = 8 min; the others 0.15 s an item = 1.5 min.
    assert estimating.lane_minutes("neuronx", 600) == pytest.approx(8.0)
    assert estimating.lane_minutes("vllm", 600) == pytest.approx(1.5)
    small = [dataclasses.replace(plan("g6", "small", 40, G6), lane_minutes=1.5),
             dataclasses.replace(plan("inf2", "small", 40, INF2), lane_minutes=8.0)]
    result = estimating.estimate(small, bedrock_lane_minutes=1.5)
    # 40 + 20 + (1.5 + 8 + 1.5 for Bedrock) + 10 = 81 minutes, both rigs billed all of it
    assert result.minutes == pytest.approx(81) and result.phases[0].lane_minutes == pytest.approx(11)
    assert result.usd == pytest.approx((G6 + INF2) * 81 / 60)
    assert "benchmark 20, the quality lane 11 and destroy 10 min" in estimating.describe(result)[0]


@pytest.mark.parametrize(("given", "offline", "words", "items"), [
    ("", False, ["--demos", "default,quality"], 600),  # the benchmark's own default --quality-n
    ("--runs 1", True, ["--runs", "1", "--demos", "default,quality", "--quality-n", "30"], 30),
    ("--quality-n 120", True, ["--quality-n", "120", "--demos", "default,quality"], 120),
    ("--demos chat", False, ["--demos", "chat"], None),
    ("--demos=chat,quality --quality-n=50", False, ["--demos=chat,quality", "--quality-n=50"], 50),
    ("--dem chat,quality --quality-n 40", True, ["--dem", "chat,quality", "--quality-n", "40"], 40),  # abbreviated
])
def test_the_rehearsal_runs_the_quality_lane_unless_the_options_name_the_parts(given, offline, words, items):
    assert bench_options.prepare(given, offline) == bench_options.RehearsalBench(tuple(words), items)


def test_a_rig_without_a_price_is_left_out_and_said():
    result = estimating.estimate([plan("g6", "small", 40, G6), plan("odd", "small", 40, None)])
    assert result.usd == pytest.approx(G6 * 70 / 60)
    assert result.unpriced == ("odd (small, t)",)
    lines = estimating.describe(result)
    assert lines[0].endswith(f"up to ${G6 * 70 / 60:.2f} for the priced rigs, plus unpriced odd (t)")
    assert lines[-1].endswith(f"at most ${G6 * 4:.2f} for the priced rigs, plus unpriced odd (small, t)")


def test_a_phase_of_unpriced_rigs_says_unpriced_never_a_dollar_figure():
    # an offline rehearsal of a model that moved the rig to a size the price file does not hold (issue 31)
    result = estimating.estimate([plan("g6", "small", 40, None), plan("g6", "big", 40, G6)])
    lines = estimating.describe(result)
    assert lines[0].endswith("unpriced (g6 (t): no price known)") and "$0.00" not in "\n".join(lines)
    assert lines[2] == ("total: up to 2 h 20 min, up to $" + f"{G6 * 70 / 60:.2f} for the priced rigs, plus "
                        "unpriced g6 (t)")


def test_the_rehearsals_own_cost_is_instance_hours_times_the_price():
    g6 = timeline.PhaseTimeline(rig="g6", phase="small", model_id="m", deploy_start="2026-11-29T10:00:00Z",
                                instance_launched="2026-11-29T10:02:00Z", ready="2026-11-29T10:16:00Z",
                                destroyed="2026-11-29T10:47:00Z", usd_per_hour=G6)
    sagemaker = timeline.PhaseTimeline(rig="sagemaker", phase="small", model_id="m",
                                       deploy_start="2026-11-29T10:00:00Z",
                                       instance_launched="2026-11-29T10:00:30Z", destroyed="2026-11-29T10:30:30Z",
                                       usd_per_hour=SAGEMAKER)
    never = timeline.PhaseTimeline(rig="inf2", phase="small", model_id="m", deploy_start="2026-11-29T10:00:00Z",
                                   usd_per_hour=INF2)
    assert g6.billed_hours() == pytest.approx(0.75) and g6.cost_usd() == pytest.approx(0.6036)  # 45 min
    assert sagemaker.cost_usd() == pytest.approx(0.56335)  # 30 min
    assert never.cost_usd() == 0  # no instance ever launched: nothing billed
    assert timeline.total_cost([g6, sagemaker, never]) == pytest.approx(1.16695)
    still_up = timeline.PhaseTimeline(rig="g6", phase="big", model_id="m", deploy_start="2026-11-29T11:00:00Z",
                                      instance_launched="2026-11-29T11:00:00Z", usd_per_hour=G6)
    now = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
    assert still_up.cost_usd(now) == pytest.approx(G6)  # counted up to now, and marked so
    assert timeline.rows([still_up], now)[0][-1] == "$0.8048 (not destroyed: counted to now)"


def test_the_timeline_shows_each_event_as_time_and_offset_from_the_deploy_start():
    line = timeline.PhaseTimeline(rig="g6", phase="small", model_id="m", region="us-east-1",
                                  deploy_start="2026-11-29T10:00:00Z",
                                  instance_launched="2026-11-29T10:02:05Z", ready="2026-11-29T10:16:00Z",
                                  destroyed="2026-11-29T11:20:00Z", usd_per_hour=G6)
    full, = timeline.rows([line])
    assert full[:5] == ["g6", "small", "us-east-1", "10:00:00", "10:02:05 (+2:05)"]
    assert full[timeline.HEADER.index("SSM online")] == "-"
    assert full[timeline.HEADER.index("destroyed")] == "11:20:00 (+1:20:00)"
    compact, = timeline.rows([line], compact=True)
    assert compact[3:5] == ["10:00:00", "+2:05"]
    text = timeline.markdown([line], "Rehearsal timeline", ["offline: nothing was billed"])
    assert "| g6 | small | us-east-1 | 10:00:00 |" in text and "- offline: nothing was billed" in text


def test_first_answer_is_the_earliest_request_that_did_not_fail(tmp_path: Path):
    records = [
        {"part": "chat", "backend": "g6", "started": "2026-11-29T10:20:00.000Z", "first_ms": 250.0},
        {"part": "chat", "backend": "g6", "started": "2026-11-29T10:19:00.000Z", "first_ms": None,
         "error": "HTTP 500"},
        {"part": "counting", "backend": "g6", "started": "2026-11-29T10:19:30.000Z", "seconds": 12.5},
        {"part": "chat", "backend": "inf2", "started": "2026-11-29T10:21:00.000Z", "first_ms": 1500.0},
    ]
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + '\n{"torn": ')
    assert timeline.first_answers(path) == {"g6": "2026-11-29T10:19:42Z", "inf2": "2026-11-29T10:21:01Z"}
    assert timeline.first_answers(tmp_path / "missing.jsonl") == {}


def test_a_neuron_rigs_compile_at_boot_is_read_from_the_summary_and_shown_after_ready(tmp_path: Path):
    """The benchmark's summary.json carries the compile the agent read from the rig's boot report (provenance's
    ``compile_seconds``): the timeline shows it as a length after "ready", and "-" for a rig that compiled nothing."""
    facts = {"inf2": [{"fact": "model", "read": "Qwen/Qwen3-8B"}, {"fact": "compile_seconds", "read": 750}],
             "trn1": [{"fact": "compile_seconds", "read": 0}], "g6": [{"fact": "model", "read": "google/gemma"}],
             "sagemaker": [{"fact": "compile_seconds", "read": None, "not_reported": "no boot report"}]}
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"backends": {n: {"provenance": {"facts": f}} for n, f in facts.items()}
                                   | {"local": {"provenance": None}}}))
    assert timeline.compile_times(summary) == {"inf2": 750.0, "trn1": 0.0}
    assert timeline.compile_times(tmp_path / "missing.json") == {}
    inf2 = timeline.PhaseTimeline(rig="inf2", phase="small", model_id="Qwen/Qwen3-8B", compile_seconds=750,
                                  deploy_start="2026-11-29T10:00:00Z", ready="2026-11-29T10:31:00Z")
    g6 = timeline.PhaseTimeline(rig="g6", phase="small", model_id="m", deploy_start="2026-11-29T10:00:00Z")
    (row, other) = timeline.rows([inf2, g6])
    at = timeline.HEADER.index("compile")
    assert timeline.HEADER[at - 1:at + 2] == ["ready", "compile", "first answer"]
    assert (row[at], other[at]) == ("12:30", "-") and row[at - 1] == "10:31:00 (+31:00)"


def test_only_the_stacks_that_appeared_are_the_rehearsals():
    before = Whereabouts(stacks={r: {} for r in REGIONS} | {"us-east-2": {"InferenceBase-us-east-2": "CREATE_COMPLETE",
                                                                         "InferenceInf2": "CREATE_COMPLETE"}})
    after = Whereabouts(stacks={r: {} for r in REGIONS} | {
        "us-east-2": {"InferenceBase-us-east-2": "CREATE_COMPLETE", "InferenceInf2": "CREATE_COMPLETE",
                      "InferenceSageMaker": "CREATE_COMPLETE", "InferenceG6": "ROLLBACK_COMPLETE"},
        "us-east-1": {"InferenceBase-us-east-1": "CREATE_COMPLETE", "InferenceG6": "CREATE_COMPLETE",
                      "InferenceG5gImage": "CREATE_COMPLETE"}})
    assert created_since(before, after) == {"InferenceG6": ["us-east-1", "us-east-2"],
                                            "InferenceSageMaker": ["us-east-2"],
                                            "InferenceBase-us-east-1": ["us-east-1"]}


def test_destroy_removes_the_rigs_where_they_are_then_their_bases():
    rigs, bases = destroy_commands({"InferenceG6": ["us-east-1", "us-east-2"], "InferenceSageMaker": ["us-east-2"],
                                    "InferenceBase-us-east-1": ["us-east-1"]}, Path("/tmp/out"))
    assert shown(rigs) == ("./scripts/cdk destroy InferenceG6 InferenceG6-us-east-2 InferenceSageMaker --exclusively "
                           "--force -c region.g6=us-east-1 -c region.sagemaker=us-east-2")
    assert rigs[-2:] == ["--output", "/tmp/out-1"]
    assert shown(bases) == "./scripts/cdk destroy InferenceBase-us-east-1 --exclusively --force"
    assert destroy_commands({}) == []


@pytest.mark.parametrize("text, problem", [
    ("--runs 1 --out x", "--out is set by the rehearsal itself"),
    ("--backends=g6", "--backends is set by the rehearsal itself"),
    ("--ou x --loc", "--out, --local is set by the rehearsal itself"),  # the parser's abbreviations are its options
    ("--demos 'chat", "No closing quotation"),
])
def test_benchmark_options_the_rehearsal_sets_are_refused(text: str, problem: str):
    with pytest.raises(UsageError, match=problem):
        bench_options.prepare(text, offline=False)


def run_rigs(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rigs", *args], cwd=tmp_path, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(PROJECT_DIR)})


def test_without_a_terminal_and_without_yes_it_refuses_in_one_line_before_anything(tmp_path: Path):
    done = run_rigs("rehearse", "--offline", tmp_path=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: rehearse asks before it creates anything (on an account, rigs that bill), and this is not a "
        "terminal: pass --yes to go on without asking (the plan it prints says what it will cost)"]
    assert done.stdout == "" and not (tmp_path / "results").exists()


def test_without_credentials_it_says_how_to_log_in_and_leaves_no_folder(tmp_path: Path):
    done = run_rigs("rehearse", "g6", "--yes", tmp_path=tmp_path)
    assert done.returncode == 3
    assert done.stderr.strip().splitlines() == [
        "error: no AWS credentials found: run `aws configure` or `aws sso login` (or `aws login`), or set "
        "AWS_PROFILE to a profile with credentials"]
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


@pytest.mark.parametrize("args, problem", [
    (["rehearse", "g7", "--yes"], "error: unknown rig 'g7'; known rigs: g6, g5g, inf2, trn1, sagemaker, bedrock"),
    (["rehearse", "--yes", "--inject-capacity", "g6.xlarge@us-east-2"],
     "error: --inject-capacity is for --offline (moto's server) only"),
    (["rehearse", "--yes", "--offline", "--inject-capacity", "g6.xlarge"], "give TYPE@REGION"),
    (["rehearse", "--yes", "--tunnel-limit", "600000"],
     "error: --tunnel-limit shapes the relays of --offline; a real rehearsal measures the SSM tunnel itself"),
    (["rehearse", "--yes", "--offline", "--tunnel-limit", "0"], "give a byte rate above 0, e.g. 600000"),
    (["rehearse", "--yes", "--offline", "--bench-options=--out here"], "--out is set by the rehearsal itself"),
    # the benchmark's own parser checks its options before anything is created (it once ran only after every
    # rig was up: `--runs 0` deployed them all, then the benchmark exited 2)
    (["rehearse", "--yes", "--offline", "--bench-options=--runs 0"],
     "error: --bench-options: the benchmark refuses them: argument --runs: 0 is too small: give at least 1 (see "
     "`python -m agent.run --help`); nothing created"),
    (["rehearse", "--yes", "--offline", "--model", "acme/Unknown-7B"],
     "error: --model acme/Unknown-7B: not in the catalog's models section (google/gemma-4-E2B-it, "),
    (["rehearse", "--yes", "--bench-options=--demos chat --bogus"],
     "error: --bench-options: the benchmark refuses them: unrecognized arguments: --bogus (see "
     "`python -m agent.run --help`); nothing created"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], problem: str):
    done = run_rigs(*args, tmp_path=tmp_path)
    assert done.returncode == 2 and problem in done.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "results").exists()


def test_the_tunnel_limit_reaches_the_benchmark_only_offline(tmp_path: Path):
    offline = bench_options.command(["g6"], tmp_path, "http://127.0.0.1:9/v1", None, ("--runs", "1"), 600000.0)
    assert offline[offline.index("--tunnel-limit") + 1] == "600000"
    assert "--tunnel-limit" not in bench_options.command(["g6"], tmp_path, None, None, (), 600000.0)


def test_good_benchmark_options_pass_the_check():
    assert bench_options.prepare("--runs 1 --demos chat", offline=False).words == ("--runs", "1", "--demos", "chat")
    assert bench_options.prepare("", offline=True).lane_items == 30  # what the rehearsal adds, the agent takes
    with pytest.raises(UsageError, match="the benchmark refuses them: --bfcl-n only changes the bfcl part"):
        bench_options.prepare("--demos chat --bfcl-n 5", offline=False)  # checked as the real run checks them


def test_an_interrupted_rehearsals_timeline_says_so_and_names_no_report_it_never_wrote(tmp_path: Path):
    out = io.StringIO()
    rehearsal = state(Options(rigs=["g6"]), tmp_path, out)
    rehearsal.phases = [Phase("small", bench_folder=tmp_path / "bench", bench_exit=2)]

    def interrupted_benchmark(*_args, **_kwargs):
        rehearsal.step = "the benchmark (small model)"
        raise KeyboardInterrupt

    steps = flow.Steps(up=lambda *_args: None, benchmark=interrupted_benchmark, down=lambda *_args: True)
    assert flow.rehearse(rehearsal, steps) == 130
    record = json.loads((tmp_path / "timeline.json").read_text())
    assert record["interrupted"].startswith("interrupted during the benchmark (small model) at ")
    assert record["interrupted"].endswith("; the clean-up then destroyed everything the rehearsal created")
    markdown = (tmp_path / "TIMELINE.md").read_text()
    assert markdown.startswith("# Rehearsal timeline (interrupted)") and f"- {record['interrupted']}" in markdown
    said = out.getvalue()
    assert "report (small model): none written (the benchmark exited 2; what it printed says why)" in said
    assert "REPORT.md" not in said


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("answer, goes_on", [("y\n", True), ("yes\n", True), ("\n", False), ("no\n", False)])
def test_nothing_is_created_unless_the_answer_is_yes(answer: str, goes_on: bool, tmp_path: Path):
    out = io.StringIO()
    assert prepare.consent(state(Options(), tmp_path, out), FakeTerminal(answer)) is goes_on
    assert out.getvalue() == "Go on and create these rigs? [y/N] "


def test_a_second_interrupt_says_what_is_still_up_and_the_commands_that_remove_it(tmp_path: Path):
    out = io.StringIO()
    rehearsal = state(Options(), tmp_path, out)
    rehearsal.destroyer = SimpleNamespace(left={"InferenceG6": ["us-east-1"], "InferenceBase-us-east-1": ["us-east-1"]})
    cleanup.say_what_is_left(rehearsal)
    lines = out.getvalue().splitlines()
    assert lines[:3] == [
        "interrupted again: the clean-up stopped.",
        "still up, created by this rehearsal (a deletion may be under way): InferenceBase-us-east-1 in us-east-1; "
        "InferenceG6 in us-east-1",
        "remove it with:"]
    assert lines[3:5] == ["  ./scripts/cdk destroy InferenceG6 --exclusively --force -c region.g6=us-east-1",
                          "  ./scripts/cdk destroy InferenceBase-us-east-1 --exclusively --force"]
    assert "python -m rigs sweep --yes" in lines[5] and "lifetime limit" in lines[6]


def test_an_interrupt_while_destroying_stops_the_destroy_command_and_says_what_is_left(tmp_path: Path):
    """The second Ctrl-C arrives while ``cdk destroy`` runs: that command is stopped, not left behind."""
    from tests.agent.conftest import alive_after

    started = tmp_path / "pid"
    fake_cdk = tmp_path / "cdk"
    fake_cdk.write_text(f"#!/bin/sh\necho $$ > {started}\nexec sleep 60\n")
    fake_cdk.chmod(0o755)
    destroyer = Destroyer(tmp_path / "down", locate=lambda: Whereabouts(stacks={r: {} for r in REGIONS}),
                          say=lambda _line: None, running=processes.Running(), cdk=str(fake_cdk))

    def interrupt() -> None:
        while not started.exists() or not started.read_text().strip():
            time.sleep(0.05)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        destroyer.destroy({"InferenceG6": ["us-east-1"]})
    assert alive_after({int(started.read_text())}) == set()
    assert destroyer.left == {"InferenceG6": ["us-east-1"]}


@pytest.fixture
def counted_preflight(endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Counter:
    """(rig, region) -> how often preflight checked it, against moto's server, with a fresh placement file
    and the AWS CLI and Session Manager plugin as fakes on PATH."""
    from rigs.account import preflight
    from tests.fake_tools import tools

    monkeypatch.setenv("RIGS_STATE_DIR", str(tmp_path / "state"))
    tools(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    checked: Counter = Counter()
    check_rig = preflight.check_rig

    def counted(rig, region, probe, *more):
        checked[(rig.name, region)] += 1
        return check_rig(rig, region, probe, *more)

    monkeypatch.setattr(preflight, "check_rig", counted)
    return checked


def test_a_rehearsal_checks_each_rig_in_each_region_once(counted_preflight: Counter, tmp_path: Path):
    """Doctor, then preflight: the placement is recorded from the doctor's own preflight checks."""
    g6, sagemaker = CATALOG.get("g6"), CATALOG.get("sagemaker")
    out = io.StringIO()
    (tmp_path / "evidence").mkdir()
    rehearsal = state(Options(rigs=["g6", "sagemaker"], yes=True, bootstrap=True, skip_checks=("account-plan",)),
                      tmp_path / "evidence", out)
    assert prepare.plan(rehearsal, [g6, sagemaker]) is not None
    assert "--skip-check account-plan: the doctor's 'Account plan' rows stop no rig" in out.getvalue()
    assert counted_preflight == {(rig.name, region): 1 for rig in (g6, sagemaker) for region in rig.regions}
    assert [c.region for c in placement.load().get("g6").candidates] == list(g6.regions)
    assert f"g6: try {g6.regions[0]} (" in out.getvalue()
    # moto's server puts the SageMaker image's tag in its stand-in for AWS's registry in every region: the rig
    # tries each of its regions, the pinned one first, as an EC2 rig does
    assert "sagemaker: try us-east-2 (any zone) -> us-east-1 (any zone) -> us-west-2 (any zone)" in out.getvalue()


def test_up_runs_preflight_once_and_only_for_a_rig_with_nothing_recorded(counted_preflight: Counter):
    g6 = CATALOG.get("g6")
    session = aws.make_session()
    with_doctor = DeploySequence(session, show=lambda _table: None)
    assert with_doctor.doctor([g6], ignore=("CDK bootstrap",)) == {"g6": list(g6.regions)}
    announced: list[list[str]] = []
    plans = with_doctor.plans([g6], fresh=False, announce=lambda need: announced.append([r.name for r in need]))
    assert announced == [["g6"]] and [c.region for c in plans["g6"][1]] == list(g6.regions)
    assert counted_preflight == {("g6", region): 1 for region in g6.regions}  # the doctor's checks, recorded
    again = DeploySequence(session, show=lambda _table: None).plans([g6], fresh=False, announce=announced.append)
    assert again == plans and len(announced) == 1  # recorded: no preflight
    fresh = DeploySequence(session, show=lambda _table: None).plans([g6], fresh=True)
    assert fresh == plans  # --preflight without --doctor: preflight in the four regions, once more
    assert counted_preflight == {("g6", region): 2 if region in g6.regions else 1 for region in REGIONS}


def test_rehearse_refuses_to_start_above_max_usd_before_anything(counted_preflight: Counter, tmp_path: Path):
    """The cost is checked first: no benchmark options read, no credentials asked, no folder, nothing said."""
    out = io.StringIO()
    options = Options(rigs=["g6"], yes=True, bootstrap=True, max_usd=1, evidence=tmp_path / "evidence",
                      bench_options="--demos chat")
    # g6 at $0.8048/h (rigs/prices.yaml: moto has no Pricing API) until its 4 h lifetime limit: $3.22
    with pytest.raises(UsageError) as refused:
        flow.run(options, out=out)
    assert str(refused.value) == (
        "--max-usd 1: the rigs could cost up to $3.22 (each rig's hourly price x its lifetime limit), $2.22 "
        "above the limit; nothing deployed (lower --max-hours, leave rigs out, or raise --max-usd)")
    assert out.getvalue() == "" and not (tmp_path / "evidence").exists() and counted_preflight == Counter()


def test_an_offline_rehearsal_over_max_usd_sets_nothing_up(tmp_path: Path):
    """Offline, before moto's server or the local rig starts: g6 and its big variant, $3.22 each (4 h)."""
    options = Options(rigs=["g6", "bedrock"], yes=True, offline=True, big=True, max_usd=5,
                      evidence=tmp_path / "evidence")
    with pytest.raises(UsageError, match=r"^--max-usd 5: the rigs could cost up to \$6.44 .*\$1.44 above the limit"):
        flow.run(options, out=io.StringIO())
    assert not (tmp_path / "evidence").exists()


def test_up_refuses_to_start_above_max_usd_in_one_line(counted_preflight: Counter, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    from rigs.cli import main

    evidence = tmp_path / "up"
    assert main(["up", "g6", "sagemaker", "--max-usd", "5", "--evidence", str(evidence)]) == 2
    # (0.8048 + 1.1267) $/h x 4 h = $7.73, the priciest region of each (the file's one price)
    assert capsys.readouterr().err.splitlines() == [
        "error: --max-usd 5: the rigs could cost up to $7.73 (each rig's hourly price x its lifetime limit), $2.73 "
        "above the limit; nothing deployed (lower --max-hours, leave rigs out, or raise --max-usd)"]
    assert not evidence.exists() and counted_preflight == Counter()  # refused before any other check
    # within the limit, up goes on (here to say the regions are not bootstrapped)
    assert main(["up", "g6", "sagemaker", "--max-hours", "2", "--max-usd", "5", "--evidence", str(evidence)]) == 1
    assert "not bootstrapped for the CDK" in capsys.readouterr().err
    with pytest.raises(SystemExit) as bad:
        main(["up", "g6", "--max-usd", "0"])
    assert bad.value.code == 2 and "give an amount above 0 in USD" in capsys.readouterr().err


def test_an_unpriced_rig_cannot_be_bounded():
    result = estimating.estimate([plan("g6", "small", 40, G6), plan("odd", "small", 40, None)])
    assert estimating.over_limit(result, 100) == ("--max-usd 100: no price known for odd (small, t), so the cost "
                                                  "cannot be bounded; nothing deployed")
    assert estimating.over_limit(estimating.estimate([plan("g6", "small", 40, G6)]), 3.22) is None  # 3.2192


def test_offline_the_endpoint_is_passed_down_and_the_environment_left_alone(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch):
    from rigs.rehearsal.offline import OfflineAws

    monkeypatch.setenv("AWS_PROFILE", "the-users")
    before = dict(os.environ)
    offline = OfflineAws(tmp_path / "offline")
    offline.endpoint_url = "http://localhost:4566"  # as start() sets it once moto's server says it is ready
    rehearsal = State(Options(offline=True, profile="ignored-offline"), CATALOG, tmp_path, Output(io.StringIO()),
                      offline=offline)
    env = rehearsal.command_env()
    assert env["AWS_ENDPOINT_URL"] == "http://localhost:4566" and env["AWS_ACCESS_KEY_ID"] == "testing"
    assert "AWS_PROFILE" not in env and env["RIGS_STATE_DIR"] == str(tmp_path / "offline" / "state")
    assert rehearsal.placement_file == tmp_path / "offline" / "state" / "placement.json"
    session = rehearsal.make_session()
    clients = aws.Clients(session)
    assert clients("cloudformation", "us-west-2").meta.endpoint_url == "http://localhost:4566"
    assert session.get_credentials().access_key == "testing" and session.region_name == "us-east-1"
    assert dict(os.environ) == before  # nothing put into this process's environment


def test_no_module_of_the_rehearsal_changes_the_environment():
    """Offline, moto's endpoint is passed down (sessions, commands' env, placement file), never put into os.environ."""
    import ast

    changes = []
    for path in sorted((PROJECT_DIR / "rigs" / "rehearsal").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            target = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None
            if target is not None and ast.unparse(target) == "os.environ" and node.func.attr in (
                    "update", "pop", "clear", "setdefault", "__setitem__", "__delitem__"):
                changes.append(f"{path.name}:{node.lineno}")
            if isinstance(node, (ast.Assign, ast.Delete)) and any(
                    isinstance(t, ast.Subscript) and ast.unparse(t.value) == "os.environ" for t in node.targets):
                changes.append(f"{path.name}:{node.lineno}")
    assert changes == []
