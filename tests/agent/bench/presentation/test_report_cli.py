"""``python -m agent.report``: rebuild from evidence folders, price them for another workload, compare
two folders with the differences larger than their intervals marked; and the end-of-run terminal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from agent import report as report_cli
from agent.bench.analysis import stats
from agent.bench.command import evidence, runner
from agent.bench.presentation import html_report, terminal
from agent.bench.presentation.compare import compare, render
from agent.bench.results.run import RunFile
from agent.bench.results.summary import Summary

from tests.agent.bench.conftest import make_options

from tests.agent.bench.conftest import openai_backend
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.scripted import Script
from tests.agent.bench.fakes.synthetic import G5G_PRICE
from tests.agent.bench.fakes.synthetic import G6_PRICE
from tests.agent.bench.fakes.synthetic import backend
from tests.agent.bench.fakes.synthetic import counting_block
from tests.agent.bench.fakes.synthetic import full_summary
from tests.agent.bench.fakes.synthetic import level
from tests.agent.bench.fakes.synthetic import slo
from tests.agent.bench.fakes.synthetic import summary as synthetic_summary
from tests.conftest import PLOTS

TTFT_SHIFT_MS = 300.0


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "before"
    with FakeOpenAI(Script(chunk_delay_s=0.001)) as fake, PLOTS.drawn():  # its plots' file modes are read
        runner.run([openai_backend("g6", fake.base_url)], make_options("--runs", "5", "--demos", "chat"), out, None)
    return out


def shifted_copy(src: Path, dst: Path, shift_ms: float) -> Path:
    """The same evidence with every reply arriving ``shift_ms`` later (TTFT and e2e up, decode unchanged)."""
    dst.mkdir(parents=True)
    shutil.copy(src / evidence.RUN, dst / evidence.RUN)
    log = evidence.RequestLog(dst / evidence.REQUESTS)
    for r in evidence.read_requests(src / evidence.REQUESTS):
        r.pop("seq", None)
        for key in ("first_ms", "last_ms", "done_ms"):
            if r.get(key) is not None:
                r[key] += shift_ms
        r["chunk_ms"] = [c + shift_ms for c in r.get("chunk_ms") or []]
        log.append(r)
    log.close()
    return dst


def test_the_end_of_a_run_shows_the_scoreboard_recommendation_and_report(before: Path, capsys):
    # the module fixture printed at its end; run once more to capture it here
    out = before.parent / "again"
    with FakeOpenAI(Script(chunk_delay_s=0.001)) as fake:
        runner.run([openai_backend("g6", fake.base_url)], make_options("--runs", "1", "--demos", "chat"), out, None)
    text = capsys.readouterr().out
    assert "Scoreboard" in text and "g6" in text
    # a plain run measures its levels under the default target once: too thin to choose, and it says why
    assert "Which one: not enough evidence" in text and "measured once (no repeats)" in text
    assert f"Report: {out / 'REPORT.md'} and {out / html_report.FILE}" in text


def test_rebuilding_one_folder_reproduces_its_summary(before: Path, tmp_path: Path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(before, copy)
    (copy / "summary.json").unlink()
    (copy / "REPORT.md").unlink()
    assert report_cli.main([str(copy)]) == 0
    assert json.loads((copy / "summary.json").read_text()) == json.loads((before / "summary.json").read_text())
    assert (copy / "REPORT.md").read_text() == (before / "REPORT.md").read_text()
    assert (copy / html_report.FILE).is_file()
    assert f"Report: {copy / 'REPORT.md'}" in capsys.readouterr().out


def test_two_folders_compared_with_real_differences_marked(before: Path, tmp_path: Path, capsys):
    after = shifted_copy(before, tmp_path / "after", TTFT_SHIFT_MS)
    assert report_cli.main([str(before), str(after), "--out", str(tmp_path / "cmp")]) == 0
    text = (tmp_path / "cmp" / "COMPARISON.md").read_text()
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert rows["TTFT ms, mean at c=1"].endswith("| **higher (worse)** |")
    assert rows["e2e ms, mean at c=1"].endswith("| **higher (worse)** |")
    assert rows["decode tok/s, mean at c=1"].endswith("| within the intervals |")
    assert (tmp_path / "cmp" / "COMPARISON.html").is_file()
    shown = capsys.readouterr().out
    assert "Comparison" in shown and "higher (worse)" in shown


def test_runs_of_other_traffic_say_so_first_and_compare_only_the_fixed_tasks(before: Path, tmp_path: Path):
    """A default run against a preset=chat one (its replies 300 ms later too): the comparison opens with the workloads
    differing, and shows TTFT without calling it worse; one priced for another volume leaves only $/month out."""
    from agent.bench.analysis.traffic import parse_spec

    def with_workload(folder: Path, spec: str) -> Path:
        run = json.loads((folder / "run.json").read_text())
        run["options"]["workload"] = parse_spec(spec).record().model_dump(mode="json")
        (folder / "run.json").write_text(json.dumps(run))
        return folder

    chat = with_workload(shifted_copy(before, tmp_path / "chat", TTFT_SHIFT_MS), "preset=chat")
    assert report_cli.main([str(before), str(chat), "--out", str(tmp_path / "cmp")]) == 0
    text = (tmp_path / "cmp" / "COMPARISON.md").read_text()
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    said = (f"The workloads differ: `{chat}` sent preset chat: prompts of 512 +- 128 and outputs of 256 +- 64 tokens, "
            f"`{before}` sent the reference's prompt and outputs of 100 tokens.")
    assert said in text and text.index(said) < text.index("## Recommendations")
    assert rows["TTFT ms, mean at c=1"].endswith("| not compared (other traffic) |") and "worse" not in text
    volume = with_workload(shifted_copy(before, tmp_path / "volume", 0.0), "output_tokens_per_month=9B")
    assert report_cli.main([str(before), str(volume), "--out", str(tmp_path / "cmp2")]) == 0
    text = (tmp_path / "cmp2" / "COMPARISON.md").read_text()
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert "The workloads differ" not in text and "is priced for another volume" in text
    assert not rows["TTFT ms, mean at c=1"].endswith("not compared (other traffic) |")


def test_backends_in_only_one_folder_are_named_not_compared(before: Path, tmp_path: Path):
    other = tmp_path / "other"
    with FakeOpenAI(Script(chunk_delay_s=0.001)) as fake:
        runner.run([openai_backend("g5g", fake.base_url, metadata={"instance_type": "g5g.2xlarge"})],
                   make_options("--runs", "1", "--demos", "chat"), other, None)
    assert report_cli.main([str(before), str(other), "--out", str(tmp_path / "cmp")]) == 0
    text = (tmp_path / "cmp" / "COMPARISON.md").read_text()
    assert f"Only in `{before}`: g6" in text and f"Only in `{other}`: g5g" in text
    assert "nothing to compare" in text


def tree(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_another_workload_goes_to_a_new_folder_and_leaves_the_evidence_as_measured(before: Path, tmp_path: Path,
                                                                                  capsys):
    copy = tmp_path / "copy"
    shutil.copytree(before, copy)
    measured = tree(copy)
    priced = tmp_path / "priced"
    assert report_cli.main([str(copy), "--workload", "output_tokens_per_month=3B,tool_calls=no",
                            "--min-accuracy", "90%", "--out", str(priced)]) == 0
    assert tree(copy) == measured  # not a byte of the evidence changed
    run = json.loads((priced / "run.json").read_text())
    assert run["options"]["workload"]["output_tokens_per_month"] == 3e9 and run["options"]["min_accuracy"] == 0.9
    assert "set afterwards by python -m agent.report" in run["notes"][-1] and str(copy) in run["notes"][-1]
    assert (priced / "requests.jsonl").read_bytes() == measured["requests.jsonl"]
    s = json.loads((priced / "summary.json").read_text())
    assert s["recommendation"]["workload"]["tool_calls"] is False and s["recommendation"]["min_accuracy"] == 0.9
    assert "3 B output tokens a month" in (priced / "REPORT.md").read_text()
    assert f"({copy} is left as measured)" in capsys.readouterr().out


def test_a_quality_floor_reprices_too_and_two_values_of_it_are_refused(before: Path, tmp_path: Path, capsys):
    priced = tmp_path / "priced"
    assert report_cli.main([str(before), "--min-quality", "70%", "--out", str(priced)]) == 0
    run = json.loads((priced / "run.json").read_text())
    assert run["options"]["min_quality"] == 0.7 and "(min_quality)" in run["notes"][-1]
    s = json.loads((priced / "summary.json").read_text())
    assert s["recommendation"]["min_quality"] == 0.7
    assert "**Quality floor**: 70% answer quality" in (priced / "REPORT.md").read_text()
    by_workload = tmp_path / "by-workload"
    assert report_cli.main([str(before), "--workload", "min_quality=0.6", "--out", str(by_workload)]) == 0
    assert json.loads((by_workload / "run.json").read_text())["options"]["min_quality"] == 0.6
    capsys.readouterr()
    assert report_cli.main([str(before), "--workload", "min_quality=0.6", "--min-quality", "0.7",
                            "--out", str(tmp_path / "both")]) == 2
    assert "the same floor with two values" in capsys.readouterr().err and not (tmp_path / "both").exists()


def test_compare_models_re_renders_the_evidence_with_its_rule(before: Path, tmp_path: Path):
    out = tmp_path / "compared"
    assert report_cli.main([str(before), "--compare-models", "--out", str(out)]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["options"]["compare_models"] is True and "(compare_models)" in run["notes"][-1]
    models = json.loads((out / "summary.json").read_text())["recommendation"]["models"]
    assert models["compare_models"] is True and models["different"] == [] and models["compared"]
    assert f"- **Model**: {models['compared']} (served by" in (out / "REPORT.md").read_text()


def test_without_out_a_repriced_copy_gets_a_fresh_folder_beside_the_evidence(before: Path, tmp_path: Path):
    copy = tmp_path / "copy"
    shutil.copytree(before, copy)
    measured = tree(copy)
    assert report_cli.main([str(copy), "--workload", "output_tokens_per_month=3B"]) == 0
    assert tree(copy) == measured
    (priced,) = (tmp_path / "copy-repriced").iterdir()
    assert "3 B output tokens a month" in (priced / "REPORT.md").read_text()


def test_out_with_one_folder_is_where_the_rebuilt_report_goes(before: Path, tmp_path: Path):
    measured = tree(before)
    rebuilt = tmp_path / "rebuilt"
    assert report_cli.main([str(before), "--out", str(rebuilt)]) == 0
    assert tree(before) == measured
    assert (rebuilt / "summary.json").read_text() == (before / "summary.json").read_text()
    assert (rebuilt / "REPORT.md").read_text() == (before / "REPORT.md").read_text()
    # a folder that already holds a run's evidence is refused, and nothing is written into it
    assert report_cli.main([str(before), "--out", str(before.parent / "again")]) == 2


def test_evidence_files_are_readable_like_the_plots(before: Path):
    modes = {p.name: p.stat().st_mode & 0o777 for p in before.iterdir()}
    for name in ("REPORT.md", "REPORT.html", "run.json", "summary.json", "requests.jsonl", "ttft_ms.png"):
        assert modes[name] == 0o644, (name, oct(modes[name]))


@pytest.mark.parametrize("setup,message", [
    (lambda d: None, "no such folder"),
    (lambda d: d.mkdir(), "not an evidence folder"),
    (lambda d: (d.mkdir(), (d / "run.json").write_text("{"), (d / "requests.jsonl").write_text("")),
     "not readable JSON"),
    (lambda d: (d.mkdir(), (d / "run.json").write_text("[]"), (d / "requests.jsonl").write_text("")),
     "not a run.json written by python -m agent.run"),
    (lambda d: (d.mkdir(), (d / "run.json").write_text('{"backends": []}'),
                (d / "requests.jsonl").write_text('{"seq": 1, "part": "chat", "backend": "g6", "tokens": 3}\n')),
     "the report could not be rebuilt (RecordError: record 1 (part 'chat'): phase: Field required"),
])
def test_bad_folders_are_one_line_and_exit_2(tmp_path: Path, capsys, setup, message):
    folder = tmp_path / "x"
    setup(folder)
    assert report_cli.main([str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (folder / "summary.json").exists()


def test_another_traffic_shape_is_not_repriced_but_named_as_the_run_to_make(before: Path, tmp_path: Path, capsys):
    """The latency was measured for the run's traffic: a key that shapes it is refused (one line, exit 2, nothing
    written); the volume keys re-price, and the shape keys left out keep the run's values."""
    copy = tmp_path / "copy"
    shutil.copytree(before, copy)
    assert report_cli.main([str(copy), "--workload", "output_tokens_per_month=3B,input_per_output=8"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: {copy}: --workload: input_per_output shapes the traffic, and this evidence's latency was "
                   "measured for input_per_output=0.2; re-pricing changes only output_tokens_per_month, peak_to_average, "
                   "tool_calls, min_quality. To measure that traffic, run: python -m agent.run --workload "
                   "output_tokens_per_month=3000000000,input_per_output=8 --backends g6 --concurrency 1"]
    assert not (tmp_path / "copy-repriced").exists()
    priced = tmp_path / "priced"
    assert report_cli.main([str(copy), "--workload", "peak_to_average=2,input_per_output=0.2", "--out", str(priced)]) == 0
    workload = json.loads((priced / "run.json").read_text())["options"]["workload"]
    assert (workload["peak_to_average"], workload["input_per_output"]) == (2.0, 0.2)  # the reference's prompt


@pytest.mark.parametrize("measured, asked, sent", [
    ("prompt_input_tokens_mean=64,output_tokens_mean=16,seed=3", "preset=rag", {"preset": "rag", "seed": 3, "prompt_input_tokens_mean": 4096.0}),
    ("input_per_output=5", "prompt_input_tokens_mean=300", {"prompt_input_tokens_mean": 300.0}),
    ("preset=chat,turns=2,think_time_s=1", "preset=rag,output_tokens_per_month=2B", {"preset": "rag", "turns": 1}),
])
def test_the_run_to_make_is_one_agent_run_accepts_and_it_sends_the_traffic_asked(
        before: Path, tmp_path: Path, capsys, measured: str, asked: str, sent: dict):
    """The hint for another shape is a command python -m agent.run's own parser and checks accept, whose workload
    is the one asked (a run's lengths left beside preset=rag would win over it and send no rag traffic)."""
    import shlex

    from agent import run as run_cli
    from agent.bench.analysis.traffic import parse_spec

    copy = tmp_path / "copy"
    shutil.copytree(before, copy)
    run = json.loads((copy / "run.json").read_text())
    run["options"]["workload"] = parse_spec(measured).record().model_dump(mode="json")
    (copy / "run.json").write_text(json.dumps(run))
    assert report_cli.main([str(copy), "--workload", asked]) == 2
    command = capsys.readouterr().err.split("To measure that traffic, run: ", 1)[1].strip()
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "agent.run"]
    runner_module = run_cli._runner()
    args = run_cli.build_parser(runner_module).parse_args(argv[3:])
    runner_module.check_options(args)
    assert {k: getattr(args.workload, k) for k in sent} == sent and args.backends == "g6"


def test_a_bad_workload_is_one_line_and_exit_2(before: Path, capsys):
    with pytest.raises(SystemExit) as done:
        report_cli.main([str(before), "--workload", "peak_to_average=0.5"])
    assert done.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "python -m agent.report: error: argument --workload: peak_to_average must be at least 1 (the peak is never "
        "below the average) (see --help)"]


def test_a_bad_argument_is_one_line_naming_it_and_exit_2(before: Path, capsys):
    """As every command of the project: the problem in one line, not the multi-line usage (that is --help)."""
    with pytest.raises(SystemExit) as done:
        report_cli.main([str(before), "--min-acuracy=0.9"])
    assert done.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "python -m agent.report: error: unrecognized arguments: --min-acuracy=0.9 (see --help)"]


def terminal_summary() -> Summary:
    br = backend("bedrock", kind="bedrock", input_per_output=None, slo_block=slo(8, [level(1, 100.0), level(8, 700.0)]),
                 ttft_p50=120.0)
    g6 = backend("g6", slo_block=slo(16, [level(1, 131.5), level(16, 2000.0, ci=(1990.0, 2010.0))]), ttft_p50=120.0)
    inf2 = backend("inf2", kind="neuron", tool_calls=False, slo_block=slo(1, [level(1, 36.4)]), ttft_p50=120.0)
    return full_summary(*synthetic_summary(
        {"bedrock": br, "g6": g6, "inf2": inf2},
        {"bedrock": {"per_token": {"usd_per_m_input": 0.035, "usd_per_m_output": 0.14}}, "g6": {"hourly": G6_PRICE},
         "inf2": {"hourly": {"usd_per_hour": 0.7582}}},
        workload={"output_tokens_per_month": "1B", "input_per_output": 0, "peak_to_average": 1}))


def test_terminal_panel_shows_the_choice_and_its_switch_points():
    console = Console(width=120, record=True)
    terminal.print_end(terminal_summary(), Path("/nonexistent"), console)
    text = console.export_text()
    assert "Which one" in text and "bedrock: the cheapest backend that meets the target" in text
    assert "Below 4.2 B output tokens a month" in text
    assert "inf2 disqualified: no tool calls, and the workload needs them" in text
    assert "chosen" in text and "runner-up" in text
    assert "no report could be written" in text


def test_the_scoreboard_fits_an_80_column_terminal():
    s = terminal_summary()
    wide = s.backends["g6"].model_copy(update={"toy_model": True, "custom": True})
    s = s.model_copy(update={"backends": {**s.backends, "sagemaker": wide}})
    console = Console(width=80, record=True)
    console.print(terminal.scoreboard(s))
    lines = console.export_text().splitlines()
    assert max(len(line) for line in lines) <= 80
    assert not any("…" in line for line in lines)  # nothing cut off
    assert any(line.lstrip().startswith("sagemaker") for line in lines)
    assert any("$587.50" in line and "chosen" not in line for line in lines)


def test_the_comparison_counts_a_share_over_graded_runs_as_the_report_does():
    """Failed runs are apart from the grades in the comparison too: 5 correct of 5 graded (5 more failed)
    is 100% with the summary's own interval, not 50%."""
    entries, run = synthetic_summary({"g6": backend("g6")}, {})
    cmp = compare([("before", full_summary(entries, run, g6=counting_block(5, 5, 5))),
                   ("after", full_summary(entries, run, g6=counting_block(1, 10, 0)))])
    [row] = [r for r in cmp.backends["g6"] if r.figure == "counting correct"]
    before, after = row.values
    assert (before.value, before.n) == (1.0, 5) and (after.value, after.n) == (0.1, 10)
    assert before.ci95 == pytest.approx(stats.wilson_interval(5, 5), abs=1e-4)
    assert [(c.marked, c.text) for c in row.changes] == [(True, "lower (worse)")]


def test_two_runs_measured_once_are_never_ranked_against_each_other():
    """One repeat per level gives no interval: a goodput of 2,000 against 1,000 tok/s, or its cost, is
    shown but not marked "higher (better)"."""
    def once(goodput: float) -> Summary:
        g6 = backend("g6", slo_block=slo(16, [level(1, 131.5, repeats=1),
                                              level(16, goodput, repeats=1, ci=(goodput, goodput))]))
        return full_summary(*synthetic_summary({"g6": g6}, {"g6": {"hourly": G6_PRICE}}))

    cmp = compare([("before", once(1000.0)), ("after", once(2000.0))])
    rows = {r.figure: r for r in cmp.backends["g6"]}
    for figure in ("goodput output tok/s at capacity", "$/M output at the target", "$/month at the workload"):
        assert not rows[figure].changes[0].marked, figure
    assert rows["goodput output tok/s at capacity"].changes[0].text == "differs (no interval to judge)"
    assert "higher (better)" not in render(cmp)


def test_a_time_interval_from_two_requests_does_not_go_below_zero(before: Path, tmp_path: Path):
    two = tmp_path / "two"
    with FakeOpenAI(Script(chunk_delay_s=0.001)) as fake:
        runner.run([openai_backend("g6", fake.base_url)], make_options("--runs", "2", "--demos", "chat"), two, None)
    cmp = compare([("before", Summary.read(before / "summary.json")), ("two", Summary.read(two / "summary.json"))])
    ttft = next(r for r in cmp.backends["g6"] if r.figure == "TTFT ms, mean at c=1")
    low, high = ttft.values[1].ci95
    assert ttft.values[1].n == 2 and 0.0 <= low <= ttft.values[1].value <= high
    assert "[-" not in render(cmp)


def test_a_comparison_warns_of_another_target_and_of_an_interrupted_run(before: Path, tmp_path: Path, capsys):
    other = tmp_path / "other"
    with FakeOpenAI(Script(chunk_delay_s=0.001)) as fake:
        runner.run([openai_backend("g6", fake.base_url)],
                   make_options("--runs", "1", "--demos", "chat", "--slo", "ttft_p99_ms=250"), other, None)
    run = json.loads((other / "run.json").read_text())
    evidence.write_json(other / "run.json", {**run, "interrupted": True})
    assert report_cli.main([str(before), str(other), "--out", str(tmp_path / "cmp")]) == 0
    text = (tmp_path / "cmp" / "COMPARISON.md").read_text()
    assert (f"`{other}` was measured under another latency target (TTFT p99 <= 250 ms) than `{before}` "
            "(TTFT p99 <= 1,000 ms, ITL p99 <= 100 ms)") in text
    assert f"`{other}` is an interrupted run: its figures cover only what finished" in text
    assert text.index("Read with care") < text.index("## Recommendations")


def test_the_cost_plot_subtitle_names_only_the_marks_it_draws():
    from agent.bench.presentation.plots import cost_volume

    alone = backend("g6", slo_block=slo(1, [level(1, 131.5)]))
    s = full_summary(*synthetic_summary({"g6": alone}, {"g6": {"hourly": G6_PRICE}}, bedrock_reference=None))
    assert [c.style for c in s.recommendation.curves] == ["measured"] and not s.recommendation.switch_points
    assert cost_volume.subtitle(s) == "peak/average 3, 0.2 input tokens per output token"  # no mark named
    drawn = terminal_summary()  # bedrock and g6 cross at 4.2 B; inf2 is priced but disqualified
    assert cost_volume.subtitle(drawn).endswith("\nred dots: the cheapest backend changes; dashed: disqualified")
    listed = full_summary(*synthetic_summary({"g6": alone}, {"g6": {"hourly": G6_PRICE}}, bedrock_reference=None,
                                             not_run={"g5g": {"label": "g5g", "hourly": G5G_PRICE}}))
    assert cost_volume.subtitle(listed).endswith("\ndotted: list prices, lower bounds (not measured)")


def test_the_cost_plot_draws_every_per_token_backend_not_run_at_its_list_price():
    """Bedrock's OpenAI-compatible endpoint (bedrock-mantle), not run, is drawn at its list price beside Bedrock's
    reference and an hourly rig not run."""
    alone = backend("g6", slo_block=slo(1, [level(1, 131.5)]))
    mantle = {"label": "mantle", "per_token": {"usd_per_m_input": 0.05, "usd_per_m_output": 0.2, "source": "offline"}}
    s = full_summary(*synthetic_summary({"g6": alone}, {"g6": {"hourly": G6_PRICE}},
                                        not_run={"g5g": {"label": "g5g", "hourly": G5G_PRICE},
                                                 "bedrock-mantle": mantle}))
    curves = {c.label: c for c in s.recommendation.curves}
    assert list(curves) == ["g6", "bedrock (list price; not run)", "g5g (not run: at least 1 instance)",
                            "bedrock-mantle (list price; not run)"]
    assert curves["bedrock-mantle (list price; not run)"].usd_per_m_output is not None


def with_quality(src: Path, dst: Path, wrong: int, items: int = 40, first: int = 0) -> Path:
    """``src``'s evidence with the quality lane's records added: ``items`` arithmetic items from number ``first``,
    the first ``wrong`` of them answered wrong ("8" for 7)."""
    dst.mkdir(parents=True)
    run = json.loads((src / evidence.RUN).read_text())
    options = {**run["options"], "demos": [*run["options"]["demos"], "quality"], "quality_n": items}
    evidence.write_run(dst / evidence.RUN, RunFile.model_validate({**run, "options": options}))
    log = evidence.RequestLog(dst / evidence.REQUESTS)
    for r in evidence.read_requests(src / evidence.REQUESTS):
        r.pop("seq", None)
        log.append(r)
    for i in range(first, first + items):
        log.append({
            "part": "quality", "backend": "g6", "item": f"arithmetic/0/{i}", "suite": "arithmetic",
            "lane": "quality-2/reasoning-gym-0.1.25", "seed": 0, "answer": "7", "grading": {"kind": "number"},
            "messages": [{"role": "user", "content": "Calculate 14 / 2."}], "max_tokens": 12, "temperature": 0.0,
            "started": "2026-12-01T22:19:59.525Z", "interface": "openai-chat", "text": "8" if i - first < wrong else "7",
            "finish_reason": "stop", "status": 200, "request_id": "req-fake", "error": None, "prompt_tokens": 12,
            "output_tokens": 1, "seconds": 0.02, "streamed": False, "resends": 0})
    log.close()
    return dst


def test_a_comparison_leaves_its_folders_as_they_were_and_is_always_written(before: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch, capsys):
    after = shifted_copy(before, tmp_path / "after", TTFT_SHIFT_MS)
    measured = {folder: tree(folder) for folder in (before, after)}
    monkeypatch.chdir(tmp_path)
    assert report_cli.main([str(before), str(after)]) == 0
    assert {folder: tree(folder) for folder in (before, after)} == measured  # no report rebuilt in either
    (written,) = (tmp_path / report_cli.COMPARISONS).iterdir()  # no --out: a new folder, named by its time
    assert {p.name for p in written.iterdir()} == {"COMPARISON.md", "COMPARISON.html"}
    assert (f"Comparison: {report_cli.COMPARISONS / written.name / 'COMPARISON.md'} and "
            f"{report_cli.COMPARISONS / written.name / 'COMPARISON.html'} (the folders compared are left as they "
            "were)") in capsys.readouterr().out
    # --out in a folder compared is refused, in one line, and nothing is written
    assert report_cli.main([str(before), str(after), "--out", str(after / "cmp")]) == 2
    assert capsys.readouterr().err.strip().startswith(f"error: --out {after / 'cmp'}: that is in a folder compared")
    assert tree(after) == measured[after]


def test_the_comparison_has_answer_quality_and_the_paired_difference(before: Path, tmp_path: Path):
    """40 items right, then 10 of the same items wrong: 100% [91.2%, 100%] against 75% [59.8%, 85.8%], and on the
    same items a drop of 25 points, McNemar's p = 2 x 0.5^10."""
    base, worse = with_quality(before, tmp_path / "a", 0), with_quality(before, tmp_path / "b", 10)
    other_items = with_quality(before, tmp_path / "c", 0, first=100)  # another draw: no item in both
    assert report_cli.main([str(base), str(worse), str(other_items), "--out", str(tmp_path / "cmp")]) == 0
    text = (tmp_path / "cmp" / "COMPARISON.md").read_text()
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in text.splitlines() if line.startswith("| ")}
    accuracy = [cell.strip(" |") for cell in rows["answer quality (accuracy)"]]
    assert accuracy[1:] == ["1.000 [0.912, 1.000] n=40", "0.750 [0.598, 0.858] n=40", "1.000 [0.912, 1.000] n=40",
                            "**lower (worse)**", "within the intervals"]
    paired = [cell.strip(" |") for cell in rows["answer quality, paired difference on the same items"]]
    low, high = stats.paired_difference_interval(30, 10, 0, 0)
    assert paired[2] == f"-0.250 [{low:.3f}, {high:.3f}] n=40" and paired[4].startswith("**lower (worse), McNemar p = 0.002")
    assert paired[5] == "no item graded in both"


def test_a_capacity_that_is_only_a_floor_reads_as_one_in_the_comparison():
    """Only c=1 measured, and it held: the comparison says "≥ 1 (only c=1 measured)", as the report does, not a
    bare 1; a capacity whose next level missed stays a number."""
    def run(floor: bool) -> Summary:
        g6 = backend("g6", slo_block=slo(1, [level(1, 131.5)], fails_above=not floor))
        return full_summary(*synthetic_summary({"g6": g6}, {"g6": {"hourly": G6_PRICE}}))

    cmp = compare([("before", run(floor=True)), ("after", run(floor=False))])
    [row] = [r for r in cmp.backends["g6"] if r.figure == "SLO capacity (concurrency)"]
    assert [v.text for v in row.values] == ["≥ 1 (only c=1 measured)", None]
    text = render(cmp)
    assert "≥ 1 (only c=1 measured)" in text and "| SLO capacity (concurrency) | ≥ 1 (only c=1 measured) | 1 |" in text
