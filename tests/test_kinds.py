"""Backend kinds and catalog runtimes are asked of their descriptors (``agent/kinds.py``,
``rigs/catalog/runtimes.py``), not switched on by name: at most :data:`MAX_SWITCHES` string switches on a kind
or runtime remain outside them, and the descriptors agree with the clients, the typed results and the catalog.

A rig is asked what its kind answers (``rigs/catalog/kinds/``), not tested for its class: at most
:data:`MAX_TYPE_TESTS` ``isinstance`` checks on a kind's class remain, all in :data:`TYPE_TEST_MODULES` (the kinds,
the catalog, the stacks' table), and no code compares a rig's name with a catalog rig's."""

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


# --- a rig's kind answers for itself ----------------------------------------------------------------------------

KINDS_DIR = "rigs/catalog/kinds"
TYPE_TEST_MODULES = (f"{KINDS_DIR}/", "rigs/catalog/catalog.py", "stacks/kinds.py")
"""Where a test of a rig's class may stand: the kinds themselves, the catalog's filters, the stacks' table."""
MAX_TYPE_TESTS = 12
MAX_TYPE_TEST_FILES = 5


def kind_classes() -> frozenset[str]:
    """Every class defined in the kinds' modules (each kind's models and their bases)."""
    return frozenset(node.name for path in (PROJECT_DIR / KINDS_DIR).glob("*.py")
                     for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.ClassDef))


def _names_class(node: ast.AST, classes: frozenset[str]) -> bool:
    """A kind's class (``Ec2Rig``, ``catalog_model.Ec2Rig``), or a tuple of classes one of which is."""
    if isinstance(node, ast.Tuple):
        return any(_names_class(e, classes) for e in node.elts)
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name in classes


def type_tests(source: str, classes: frozenset[str]) -> list[tuple[int, str]]:
    """``(line, code)`` of every ``isinstance(x, <a kind's class>)`` in ``source``."""
    return [(node.lineno, ast.unparse(node)) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
            and len(node.args) == 2 and _names_class(node.args[1], classes)]


def _names_rig(node: ast.AST, rigs: frozenset[str]) -> bool:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and any(_names_rig(e, rigs) for e in node.elts)
    return isinstance(node, ast.Constant) and node.value in rigs


def name_tests(source: str, rigs: frozenset[str]) -> list[tuple[int, str]]:
    """``(line, code)`` of every comparison of a ``.name`` with a catalog rig's name (``rig.name == "g5g"``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr == "name" for s in sides) and \
                    any(_names_rig(s, rigs) for s in sides):
                found.append((node.lineno, ast.unparse(node)))
    return found


def project_files() -> list[Path]:
    return sorted([PROJECT_DIR / "app.py",
                   *(p for d in ("agent", "rigs", "stacks", "kit") for p in (PROJECT_DIR / d).rglob("*.py"))])


def test_a_rigs_class_is_tested_only_in_the_kinds_the_catalog_and_the_stacks_table():
    classes = kind_classes()
    found = {f.relative_to(PROJECT_DIR).as_posix(): type_tests(f.read_text(encoding="utf-8"), classes)
             for f in project_files()}
    found = {path: hits for path, hits in found.items() if hits}
    listed = [f"{path}:{line}: {code}" for path, hits in found.items() for line, code in hits]
    outside = [hit for hit in listed if not hit.startswith(TYPE_TEST_MODULES)]
    assert outside == [], "ask the rig what its kind answers (rigs/catalog/kinds/base.py) instead:\n" + "\n".join(outside)
    assert len(listed) <= MAX_TYPE_TESTS and len(found) <= MAX_TYPE_TEST_FILES, "\n".join(listed)


def test_no_code_tests_a_rigs_name():
    rigs = frozenset(load_catalog().rigs)
    found = [f"{f.relative_to(PROJECT_DIR).as_posix()}:{line}: {code}"
             for f in project_files() for line, code in name_tests(f.read_text(encoding="utf-8"), rigs)]
    assert found == [], "ask the rig what its kind answers (e.g. builds_own_image) instead:\n" + "\n".join(found)


@pytest.mark.parametrize("code", [
    "x = isinstance(rig, Ec2Rig)",
    "x = not isinstance(rig, BedrockBackend)",
    "x = isinstance(rig, (Ec2Rig, SageMakerRig))",
    "x = isinstance(rig, catalog_model.SageMakerRig)",
    "x = [r for r in rigs if isinstance(r, NeuronRig)]",
    "x = isinstance(rig, (int, DeployedRig))",
])
def test_each_shape_of_type_test_is_counted(code):
    assert [line for line, _ in type_tests(code, kind_classes())] == [1]


@pytest.mark.parametrize("code", [
    "x = isinstance(value, int)",
    "x = isinstance(rig, kind)",  # a class the caller chose: not one named here
    "x = isinstance(node, ast.Tuple)",
    "x = rig.on_instances",
])
def test_what_is_no_type_test_is_not_counted(code):
    assert type_tests(code, kind_classes()) == []


@pytest.mark.parametrize("code", [
    'x = rig.name == "g5g"',
    'x = "g5g" == rig.name',
    'x = b.name != "bedrock-mantle"',
    'x = rig.name in ("g6", "g5g")',
    'names = [r for r in rigs if r.name == "sagemaker"]',
])
def test_each_shape_of_name_test_is_counted(code):
    assert [line for line, _ in name_tests(code, frozenset(load_catalog().rigs))] == [1]


@pytest.mark.parametrize("code", [
    'x = name == "bedrock"',  # a backend's name from the selection, not a rig's attribute
    'x = rig.stack_name == "InferenceG5g"',
    'x = rig.name == other.name',
    'x = backend.name == MANTLE',
    'x = rig.name == "custom"',
])
def test_what_is_no_name_test_is_not_counted(code):
    assert name_tests(code, frozenset(load_catalog().rigs)) == []


def test_every_kind_answers_what_its_callers_ask():
    """Each kind of the catalog answers every question (no abstract method left); a rig is on instances or an
    endpoint, never both, and only a deployed one is either."""
    for rig in load_catalog().rigs.values():
        assert not type(rig).__abstractmethods__, type(rig).__name__
        assert not (rig.on_instances and rig.on_endpoint) and (rig.deployed or not (rig.on_instances or rig.on_endpoint))
