"""The rig's load generator zip: the same bytes for the same files, and whole: it runs with nothing of the project
but what it holds, and no library but the standard one and aiohttp (what a vLLM image has)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

from rigs.userdata import load_generator
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.paced import Pace

BLOCKED = ("rigs", "tests", "stacks", "boto3", "botocore", "pydantic", "strands", "rich", "matplotlib", "yaml",
           "openai", "httpx")
ISOLATED = f"""
import runpy, sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ImportError(f"the load generator imported {{name}}, which a rig's image may not have")
sys.meta_path.insert(0, Refuse())
sys.path.insert(0, sys.argv[1])
sys.argv = ["load_generator", *sys.argv[2:]]
runpy.run_module("{load_generator.MODULE}", run_name="__main__")
"""


def run_zip(tmp_path: Path, job: dict) -> subprocess.CompletedProcess:
    zipfile.ZipFile(io.BytesIO(load_generator.bundle())).extractall(tmp_path / "src")
    (tmp_path / "job.json").write_text(json.dumps(job))
    return subprocess.run([sys.executable, "-I", "-c", ISOLATED, str(tmp_path / "src"), str(tmp_path / "job.json"),
                           str(tmp_path / "out.jsonl")], capture_output=True, text=True, timeout=60, cwd=tmp_path)


def test_the_zip_is_the_same_bytes_each_time_and_holds_only_its_files() -> None:
    first = load_generator.bundle()
    assert first == load_generator.bundle()
    assert sorted(zipfile.ZipFile(io.BytesIO(first)).namelist()) == sorted(load_generator.FILES)


def test_it_runs_from_the_zip_alone_closed_and_open(tmp_path: Path) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 10, "stream": True,
            "stream_options": {"include_usage": True}}
    with FakeOpenAI(Pace(slots=4, ttft_s=0.01, tpot_s=0.01, tokens=10)) as server:
        url = f"http://127.0.0.1:{server.port}/v1/chat/completions"
        for job in ({"mode": "closed", "concurrency": 3, "bodies": [body] * 6},
                    {"mode": "open", "offsets_s": [0.0, 0.05, 0.1], "max_in_flight": 8, "bodies": [body] * 3}):
            done = run_zip(tmp_path, {"format": 1, "url": url, "timeout_s": 30, **job})
            assert done.returncode == 0, done.stderr
            lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
            assert lines[0]["format"] == 1 and len(lines) == 1 + len(job["bodies"])
            assert all(line["reply"]["completion_tokens"] == 10 and line["reply"]["error"] is None
                       for line in lines[1:])
    dues = sorted(line["due_s"] for line in lines[1:])
    assert [round(b - a, 2) for a, b in zip(dues, dues[1:])] == [0.05, 0.05]  # each sent on its offset


def test_a_job_of_another_format_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = run_zip(tmp_path, {"format": 99, "url": "http://127.0.0.1:9/", "mode": "closed", "bodies": []})
    assert done.returncode == 2
    assert done.stderr.strip() == "load generator: job format 99; this load generator reads format 1"
