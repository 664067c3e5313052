"""REPORT.html: self-contained, and really rendered by a headless browser (Chromium from Debian's
packages): the recommendation shows, and every plot decodes and is displayed."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import pytest

from agent.bench.analysis.recommendation import attach
from agent.bench.command import runner
from agent.bench.presentation import html_report, report
from agent.bench.presentation.plots import cost_volume as cost_plot
from agent.bench.results.run import RunFile
from agent.bench.results.summary import Summary

from tests.agent.bench.fakes import browser
from tests.agent.bench.conftest import make_options
from tests.agent.bench.conftest import openai_backend
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.scripted import Script
from tests.agent.bench.fakes.synthetic import bfcl
from tests.agent.bench.fakes.synthetic import level
from tests.agent.bench.fakes.synthetic import slo


pytestmark = pytest.mark.real_plots  # a browser decodes and displays every plot


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def evidence_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run on a fake server (g6 and g5g, chat), as ``python -m agent.run`` writes it."""
    out = tmp_path_factory.mktemp("html") / "out"
    with FakeOpenAI(Script(chunk_delay_s=0.001)) as fake:
        g6 = openai_backend("g6", fake.base_url)
        g5g = openai_backend("g5g", fake.base_url, metadata={"instance_type": "g5g.2xlarge", "region": "us-east-1"})
        runner.run([g6, g5g], make_options("--runs", "2", "--demos", "chat", "--workload",
                                           "output_tokens_per_month=2B,peak_to_average=2"), out, None)
    return out


@pytest.fixture(scope="module")
def decided_folder(evidence_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The same evidence with SLO blocks of the contract's shape and a BFCL score added, rendered again:
    the report of a run that measured capacity under a target."""
    out = tmp_path_factory.mktemp("decided")
    for name in ("requests.jsonl", "run.json"):
        (out / name).write_bytes((evidence_folder / name).read_bytes())
    s = Summary.read(evidence_folder / "summary.json")
    run = json.loads((evidence_folder / "run.json").read_text())
    run["prices"]["not_run"] = {}
    g6 = s.backends["g6"].model_copy(update={
        "slo": slo(16, [level(1, 131.5), level(4, 480.0), level(16, 1400.0, ci=(1395.0, 1405.0))]),
        "bfcl": bfcl(200, 170, 0.79, 0.89)})
    g5g = s.backends["g5g"].model_copy(update={"slo": slo(4, [level(1, 37.2), level(4, 120.0)])})
    backends, rec = attach({"g6": g6, "g5g": g5g}, RunFile.model_validate(run))
    s = Summary.model_validate({**s.as_json(), "backends": {n: b.model_dump() for n, b in backends.items()},
                                "recommendation": rec.model_dump()})
    report.make_plots(s, out)
    text = report.render(s)
    (out / "REPORT.md").write_text(text)
    (out / html_report.FILE).write_text(html_report.render(text, out, verdict=s.recommendation.verdict))
    return out, s


def test_a_run_writes_a_self_contained_html_report(evidence_folder: Path):
    page = (evidence_folder / html_report.FILE).read_text()
    dom = browser.Dom(page)
    assert dom.headings[0] == ("h1", "Benchmark report") and dom.headings[1] == ("h2", "Which one?")
    assert dom.images, "the run's plots are in the page"
    for tag, url in dom.fetched:
        assert tag == "img" and url.startswith("data:image/png;base64,"), (tag, url[:60])
    on_disk = {p.read_bytes() for p in evidence_folder.glob("*.png")}
    assert {base64.b64decode(img["src"].split(",", 1)[1]) for img in dom.images} == on_disk
    # the HTML is the Markdown report's twin
    assert "Which one?" in (evidence_folder / "REPORT.md").read_text().split("## Scoreboard")[0]


def test_model_text_cannot_inject_html(tmp_path: Path):
    page = html_report.render("# R\n\nAnswer: <script>alert(1)</script> <img src=x onerror=alert(2)>\n", tmp_path)
    assert "<script>" not in page and "&lt;script&gt;" in page and "<img src=x" not in page


def test_the_recommendation_and_the_plots_render_in_a_browser(decided_folder, tmp_path: Path):
    chromium = browser.chromium()
    out, s = decided_folder
    rec = s.recommendation
    assert rec.verdict == "choice" and rec.choice == "g6" and cost_plot.drawable(s)
    dom = browser.Dom(browser.dump_dom(chromium, out / html_report.FILE, tmp_path / "profile"))
    assert dom.headings[1] == ("h2", "Which one?")
    assert dom.quotes[0] == " ".join(rec.headline.split())
    assert "g6: the cheapest backend that meets the target" in dom.quotes[0]
    assert dom.missing_plot_texts == []
    titles = {img["alt"]: img for img in dom.images}
    assert cost_plot.TITLE in titles
    for img in dom.images:
        width, height = png_size(base64.b64decode(img["src"].split(",", 1)[1]))
        assert img.get("data-rendered") == f"{width}x{height}", img["alt"]
    assert all(url.startswith("data:") for _, url in dom.fetched)


def test_a_plot_that_does_not_decode_is_shown_as_missing(decided_folder, tmp_path: Path):
    chromium = browser.chromium()
    out, _ = decided_folder
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / cost_plot.FILE).write_bytes(b"\x89PNG\r\n\x1a\n not really a PNG")
    page = broken / html_report.FILE
    page.write_text(html_report.render((out / "REPORT.md").read_text(), broken))
    dom = browser.Dom(browser.dump_dom(chromium, page, tmp_path / "profile"))
    assert f"Plot could not be displayed: {cost_plot.TITLE}" in dom.missing_plot_texts
    assert not any(img.get("data-rendered") for img in dom.images)


def test_the_cost_plot_is_visible_on_screen(decided_folder, tmp_path: Path):
    """A screenshot holds the cost curves' own colour (matplotlib's first line colour, #1f77b4), which
    nothing else on the page uses; and the answer's box the green of a choice (#2e7d32)."""
    import matplotlib.image

    chromium = browser.chromium()
    out, _ = decided_folder
    shot = browser.screenshot(chromium, out / html_report.FILE, tmp_path / "profile", tmp_path / "shot.png")
    pixels = matplotlib.image.imread(shot)[..., :3] * 255
    target = (31, 119, 180)
    close = ((abs(pixels[..., 0] - target[0]) < 25) & (abs(pixels[..., 1] - target[1]) < 25)
             & (abs(pixels[..., 2] - target[2]) < 25))
    assert int(close.sum()) > 300
    assert int((abs(pixels - (46, 125, 50)) < 12).all(axis=-1).sum()) > 200


def test_a_missing_browser_fails_in_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI never skips the browser test"):
        browser.chromium()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        browser.chromium()
