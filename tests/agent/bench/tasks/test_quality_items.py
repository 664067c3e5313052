"""The quality lane's items: seeded and stable (the same in every process, a prefix of any larger
lane), six suites in turn, every prompt under the Neuron rigs' limit, every reference graded right;
``python -m agent.quality export`` writes exactly them, or nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from agent import quality
from agent.bench.grading.quality import grade_reply
from agent.bench.tasks.quality import gym, lane
from agent.bench.tasks.quality.items import PROMPT_TOKEN_LIMIT, SYSTEM_PROMPT, estimate_tokens
from tests.conftest import PROJECT_DIR


@pytest.fixture(scope="module")
def lane600():
    return lane.select(600, 0)


def test_600_items_in_six_suites_taken_in_turn(lane600):
    assert len(lane600) == 600 and len({i.id for i in lane600}) == 600
    assert Counter(i.suite for i in lane600) == dict.fromkeys(lane.SUITE_ORDER, 100)
    assert [i.suite for i in lane600[:6]] == list(lane.SUITE_ORDER)
    assert Counter(i.grading["kind"] for i in lane600) == {"number": 300, "choice": 200, "instructions": 100}
    instruction_types = Counter(i.grading["instructions"][0]["id"] for i in lane600 if i.suite == "instructions")
    assert len(instruction_types) == 13  # every type is asked


def test_the_first_items_of_a_seed_are_the_same_whatever_the_size(lane600):
    assert lane.select(61, 0) == lane600[:61]
    assert [i.id for i in lane600[:3]] == ["arithmetic/0/0", "gsm_symbolic/0/0", "syllogism/0/0"]
    other = lane.select(60, 1)
    assert {i.id for i in other}.isdisjoint(i.id for i in lane600)
    assert sum(a.question == b.question for a, b in zip(other, lane600)) < 6


def test_every_whole_prompt_fits_the_smallest_backend_limit(lane600):
    assert max(i.prompt_tokens_estimate for i in lane600) <= PROMPT_TOKEN_LIMIT == 128
    for item in lane600[:12]:
        assert item.messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
        assert item.prompt_tokens_estimate == 16 + sum(estimate_tokens(m["content"]) for m in item.messages)


def test_the_token_estimate_counts_digits_symbols_and_long_words():
    # "Calculate" (9 letters: 3), then 9 symbols or digits and the 7 spaces before them, one each
    assert estimate_tokens("Calculate -( 2 - 7 ) / 1.") == 3 + 9 + 7
    # every digit; a space before a word is part of the word; every byte of a non-ASCII character; a newline run
    assert estimate_tokens("12345") == 5 and estimate_tokens("a b c") == 3 and estimate_tokens("€") == 3
    assert estimate_tokens("The answer\n\nis") == 1 + 2 + 1 + 1


def test_every_reference_answer_is_graded_right(lane600):
    wrong = [(i.id, i.answer) for i in lane600 if grade_reply(i.answer, i.answer, i.grading).outcome != "right"]
    assert wrong == []


def test_the_family_labels_are_reasoning_gyms_own_and_the_two_in_law_words_its_keys_lack():
    from reasoning_gym.graphs.family_relationships import Relationship

    assert set(gym.GYM_FAMILY_LABELS) == {r.value for r in Relationship}
    assert set(gym.FAMILY_LABELS) - set(gym.GYM_FAMILY_LABELS) == {"daughter-in-law", "son-in-law"}


def test_the_version_names_the_lane_and_the_generators():
    assert lane.version() == f"quality-2/reasoning-gym-{gym.PINNED_VERSION}"


def test_sizes_and_seeds_out_of_range_are_refused():
    for n, seed in ((0, 0), (lane.MAX_N + 1, 0), (10, -1), (10, 2**31)):
        with pytest.raises(ValueError):
            lane.select(n, seed)


def export(tmp_path: Path, *argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agent.quality", "export", *argv], cwd=PROJECT_DIR, text=True,
                          capture_output=True, timeout=240, env=env)  # fmt: skip


def test_export_writes_the_same_items_in_another_process_and_hash_seed(tmp_path, lane600):
    out = tmp_path / "items.jsonl"
    done = export(tmp_path, "--n", "90", "--seed", "0", str(out), env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wrote 90 items ({lane.version()}, seed 0) to {out}"
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == [json.loads(json.dumps(i.row(lane.version()))) for i in lane600[:90]]
    first = rows[0]
    assert set(first) == {"id", "suite", "lane", "source", "messages", "max_tokens", "temperature", "answer",
                          "grading", "prompt_tokens_estimate"}
    assert first["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT} and first["temperature"] == 0


@pytest.mark.parametrize(("argv", "message"), [
    (["--n", "0"], "argument --n: 0 is too small"),
    (["--n", "ten"], "argument --n: 'ten' is not a whole number"),
    (["--n", "10001"], "argument --n: 10001 is above 10,000 items"),
    (["--n", "5", "--seed", "-3"], "argument --seed: -3 is out of range"),
])  # fmt: skip
def test_export_refuses_bad_arguments_with_one_line_and_writes_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "items.jsonl"
    with pytest.raises(SystemExit) as exit_:
        quality.main(["export", *argv, str(out)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and err.count("\n") == 1
    assert not out.exists()


def test_export_refuses_a_missing_folder_a_folder_and_an_existing_file(tmp_path, capsys):
    kept = tmp_path / "kept.jsonl"
    kept.write_text("mine\n")
    for target, message in ((tmp_path / "no" / "x.jsonl", "no such folder"), (tmp_path, "is a folder"),
                            (kept, "already exists; give another name or --force")):
        assert quality.main(["export", "--n", "3", str(target)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
    assert kept.read_text() == "mine\n"
    assert quality.main(["export", "--n", "3", "--force", str(kept)]) == 0
    assert len(kept.read_text().splitlines()) == 3


def test_an_export_that_fails_part_way_leaves_no_file(tmp_path, monkeypatch):
    out = tmp_path / "items.jsonl"

    def broken(self, version):
        raise RuntimeError("disk full")

    monkeypatch.setattr(lane.Item, "row", broken)
    with pytest.raises(RuntimeError):
        quality.main(["export", "--n", "3", str(out)])
    assert list(tmp_path.iterdir()) == []


def test_export_without_reasoning_gym_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "reasoning_gym", None)  # import fails as if not installed
    assert quality.main(["export", "--n", "3", str(tmp_path / "x.jsonl")]) == 1
    assert "reasoning-gym package is not installed; install it with" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_only_the_generator_module_imports_reasoning_gym():
    from tests.test_layering import imported_modules

    importers = sorted(str(p.relative_to(PROJECT_DIR)) for p in (PROJECT_DIR / "agent").rglob("*.py")
                       if "reasoning_gym" in imported_modules(p))  # fmt: skip
    assert importers == ["agent/bench/tasks/quality/gym.py"]


def test_cellpylibs_syntax_warnings_stay_off_the_terminal(tmp_path: Path):
    """reasoning-gym imports cellpylib, whose code warns each time Python compiles it (no bytecode kept, as under
    PYTHONDONTWRITEBYTECODE=1): the lane imports it without those warnings, and keeps everyone else's."""
    import warnings

    source = 'memoize = "x"\nif memoize is "recursive":\n    pass\n'
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with gym.quiet_dependencies():
            compile(source, str(tmp_path / "cellpylib" / "ca_functions.py"), "exec")
            compile(source, str(tmp_path / "mine.py"), "exec")
    assert [(w.category, w.filename) for w in caught] == [(SyntaxWarning, str(tmp_path / "mine.py"))]
