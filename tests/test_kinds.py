"""Backend kinds and catalog runtimes are asked of their descriptors (``agent/kinds.py``,
``rigs/catalog/runtimes.py``), not switched on by name: at most :data:`MAX_SWITCHES` string switches on a kind
or runtime remain outside them, and the descriptors agree with the clients, the typed results and the catalog."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from agent import kinds
from agent.bench.clients import bedrock, sagemaker
from agent.bench.clients.registry import CLIENTS
from agent.bench.results.run import BackendInfo
from agent.bench.results.summary import BackendSummary
from rigs.catalog.model import load_catalog
from rigs.catalog.runtimes import RUNTIMES
from tests.conftest import PROJECT_DIR

MAX_SWITCHES = 4
DESCRIPTOR_MODULES = {"agent/kinds.py", "rigs/catalog/runtimes.py"}
NAMES = frozenset({*kinds.KINDS, *RUNTIMES, "ec2"})
"""Backend kinds, catalog runtimes and the catalog's rig kinds (``ec2``, ``sagemaker``, ``bedrock``)."""
SUBJECTS = ("kind", "runtime")


def _names_kind(node: ast.AST) -> bool:
    """A string constant (or a tuple, list or set of them) naming a kind or runtime, in any case ("vLLM")."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_names_kind(e) for e in node.elts)
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in NAMES


def _is_subject(node: ast.AST) -> bool:
    """An expression that is a kind or runtime: ``kind``, ``b.entry.kind``, ``rig.runtime``, ``x["kind"]``,
    ``check_kind``, or a call of one (``ENGINES.get(rig.runtime)``)."""
    if isinstance(node, ast.Name):
        return node.id in SUBJECTS or node.id.endswith(tuple(f"_{s}" for s in SUBJECTS))
    if isinstance(node, ast.Attribute):
        return node.attr in SUBJECTS or node.attr.endswith(tuple(f"_{s}" for s in SUBJECTS))
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value in SUBJECTS
    if isinstance(node, ast.Call):
        return any(_is_subject(a) for a in (*node.args, *(k.value for k in node.keywords)))
    return False


def switches(source: str) -> list[tuple[int, str]]:
    """``(line, code)`` of every string switch on a kind or runtime in ``source``: a comparison of a kind or
    runtime with a name (``==``, ``!=``, ``in``, ``not in``) and a dict literal keyed only by names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_names_kind(s) for s in sides) and any(_is_subject(s) for s in sides):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None]
            if keys and all(_names_kind(k) for k in keys):
                found.append((node.lineno, ast.unparse(node)))
    return found


def counted_files() -> list[Path]:
    files = [PROJECT_DIR / "app.py", *(p for d in ("agent", "rigs", "stacks") for p in (PROJECT_DIR / d).rglob("*.py"))]
    return sorted(f for f in files if f.relative_to(PROJECT_DIR).as_posix() not in DESCRIPTOR_MODULES)


def test_at_most_four_string_switches_on_a_kind_or_runtime_remain_outside_the_descriptors():
    found = [f"{f.relative_to(PROJECT_DIR).as_posix()}:{line}: {code}"
             for f in counted_files() for line, code in switches(f.read_text(encoding="utf-8"))]
    assert len(found) <= MAX_SWITCHES, "ask agent/kinds.py or rigs/catalog/runtimes.py instead:\n" + "\n".join(found)


@pytest.mark.parametrize("code", [
    'if backend.kind == "neuron": pass',
    'x = b.entry.kind != "bedrock"',
    'x = self.kind in ("bedrock", "sagemaker")',
    'x = "neuronx" == rig.runtime',
    'x = ENGINES.get(rig.runtime) == "vLLM"',
    'x = row["kind"] not in ["openai", "neuron"]',
    'x = check_kind == "ec2"',
    'PORT = {"vllm": 8000, "neuronx": 8080}',
])
def test_each_shape_of_switch_is_counted(code):
    assert [line for line, _ in switches(code)] == [1]


@pytest.mark.parametrize("code", [
    'x = backend.name == "bedrock"',  # a backend's name, not its kind
    'client = session.client("sagemaker")',
    'x = descriptor(b.kind).pricing == PER_TOKEN',
    'meta = {"runtime": rig.runtime, "region": region}',
    'x = failure.kind == aws.CREDENTIALS',
])
def test_what_is_no_switch_on_a_kind_is_not_counted(code):
    assert switches(code) == []


def test_every_kind_has_a_client_and_the_typed_results_accept_exactly_the_kinds():
    assert set(CLIENTS) == set(kinds.DESCRIPTORS)
    assert set(get_args(BackendInfo.model_fields["kind"].annotation)) == set(kinds.KINDS)
    assert set(get_args(BackendSummary.model_fields["kind"].annotation)) == set(kinds.KINDS)


def test_an_aws_kinds_transport_is_the_service_its_client_calls():
    assert {k.transport for k in kinds.DESCRIPTORS if k.needs_aws} == {bedrock.SERVICE, sagemaker.SERVICE}
    assert kinds.descriptor("bedrock").transport == bedrock.SERVICE
    assert kinds.descriptor("sagemaker").transport == sagemaker.SERVICE


def test_every_catalog_rig_is_reached_as_the_kind_of_its_runtime():
    assert {r.backend_kind for r in RUNTIMES.values()} <= set(kinds.KINDS)
    assert {name: rig.backend_kind for name, rig in load_catalog().rigs.items()} == {
        "g6": "openai", "g5g": "openai", "inf2": "neuron", "trn1": "neuron", "sagemaker": "sagemaker",
        "bedrock": "bedrock", "bedrock-mantle": "bedrock-mantle"}


def test_an_unknown_kind_is_refused_with_the_kinds_listed():
    with pytest.raises(ValueError, match="kind must be one of bedrock, bedrock-mantle, openai, sagemaker, neuron, got 'grpc'"):
        kinds.descriptor("grpc")
