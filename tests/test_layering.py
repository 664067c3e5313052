"""Import rules between packages (docs/ARCHITECTURE.md): agent/ and rigs/ never import aws_cdk; neither has an
import cycle; within the benchmark, presentation reads only the typed results, grading and analysis stay pure;
and the size rules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR, parse_file

FORBIDDEN = {
    "agent": ("aws_cdk", "cdk_nag", "constructs", "stacks", "app"),
    "rigs": ("aws_cdk", "cdk_nag", "constructs", "stacks", "app", "agent"),
    "kit": ("aws_cdk", "cdk_nag", "constructs", "stacks", "app", "agent", "rigs", "boto3", "botocore", "pydantic"),
}


def imported_modules(path: Path) -> set[str]:
    tree = parse_file(path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_does_not_import_forbidden_modules(package):
    files = sorted((PROJECT_DIR / package).rglob("*.py"))
    assert files, f"{package}/ has no Python files"
    offenders = {str(f.relative_to(PROJECT_DIR)): sorted(imported_modules(f) & set(FORBIDDEN[package]))
                 for f in files}
    assert {k: v for k, v in offenders.items() if v} == {}


ACYCLIC = ("kit", "rigs", "agent")
"""Packages whose import graph has no cycle, imports made only for type checking and inside functions included."""


def import_graph(package: str, root: Path = PROJECT_DIR) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (and their packages, whose ``__init__`` runs first)."""
    modules = {}
    for path in (root / package).rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(parse_file(path)):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                targets.update([base, *(f"{base}.{alias.name}" for alias in node.names)])
        own_packages = {".".join(name.split(".")[:n]) for n in range(1, name.count(".") + 1)}
        edges = set()
        for target in targets:
            while target:
                if target in modules and target != name and target not in own_packages:
                    edges.add(target)
                target = target.rpartition(".")[0]
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle (``a, b, ..., a``), or [] when there is none."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = "open"
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            if state.get(imported) == "open":
                return path[path.index(imported):] + [imported]
            if imported not in state and (cycle := visit(imported)):
                return cycle
        state[module] = "done"
        path.pop()
        return []

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return []


@pytest.mark.parametrize("package", ACYCLIC)
def test_import_graph_has_no_cycle(package):
    graph = import_graph(package)
    assert len(graph) > 1 and any(graph.values()) or package == "kit", f"{package}/: no imports found"
    assert find_cycle(graph) == []


def folder_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The import graph between the folders of ``package``: a module in a folder below it counts as that folder
    (``rigs.catalog.pins`` is ``rigs.catalog``); a module at its top stands for itself (``rigs.aws``)."""
    def folder(module: str) -> str:
        parts = module.split(".")
        return ".".join(parts[:2]) if len(parts) > 1 else module

    folders: dict[str, set[str]] = {}
    for module, imported in graph.items():
        folders.setdefault(folder(module), set()).update(folder(m) for m in imported if folder(m) != folder(module))
    return folders


def test_the_folders_of_rigs_import_one_way():
    """Shared pieces live where every user imports them downward: no folder of ``rigs/`` imports one that imports it
    back (placement and zones in ``rigs/placement/``, image references in the catalog, the generic kit in ``kit/``)."""
    folders = folder_graph(import_graph("rigs"), "rigs")
    assert {"rigs.catalog", "rigs.deploy", "rigs.placement", "rigs.account"} <= set(folders)
    assert find_cycle(folders) == []


def test_a_cycle_between_two_folders_is_found():
    graph = {"p.a.x": {"p.b.y"}, "p.b.y": set(), "p.b.z": {"p.a.w"}, "p.a.w": set(), "p.top": {"p.a.x"}}
    assert find_cycle(folder_graph(graph, "p")) == ["p.a", "p.b", "p.a"]


def test_a_cycle_through_a_type_only_import_is_found(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub.b import B\n")
    (package / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                          "    from .. import a\n")
    (package / "c.py").write_text("def late():\n    from pkg import a\n")
    graph = import_graph("pkg", tmp_path)
    assert graph == {"pkg": set(), "pkg.sub": set(), "pkg.a": {"pkg.sub", "pkg.sub.b"}, "pkg.sub.b": {"pkg.a"},
                     "pkg.c": {"pkg.a"}}
    assert find_cycle(graph) == ["pkg.a", "pkg.sub.b", "pkg.a"]


# --- the benchmark's stages (docs/ARCHITECTURE.md, "The benchmark's stages") ---------------------------

BENCH = PROJECT_DIR / "agent" / "bench"
STDLIB = set(sys.stdlib_module_names)


def absolute_imports(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved to their full dotted name."""
    package = ".".join(path.relative_to(PROJECT_DIR).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(parse_file(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def stage_imports(stage: str) -> dict[str, set[str]]:
    return {str(f.relative_to(PROJECT_DIR)): absolute_imports(f) for f in sorted((BENCH / stage).rglob("*.py"))}


def outside(imports: set[str], allowed: tuple[str, ...]) -> list[str]:
    return sorted(m for m in imports if m.startswith("agent.") and not m.startswith(allowed))


STAGES = ("results", "tasks", "clients", "grading", "analysis", "parts", "presentation", "command")
"""The benchmark's stages, lowest first: each imports only stages before it (and itself)."""


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_imports_only_the_stages_below_it(stage):
    below = tuple(f"agent.bench.{s}" for s in STAGES[: STAGES.index(stage) + 1])
    found = {f: outside(names, (*below, "agent.backends")) for f, names in stage_imports(stage).items()}
    assert {f: [n for n in v if n.startswith("agent.bench.") and n != "agent.bench"] for f, v in found.items()
            if any(n.startswith("agent.bench.") and n != "agent.bench" for n in v)} == {}


def test_results_import_nothing_else_from_the_benchmark():
    found = {f: outside(names, ("agent.bench.results",)) for f, names in stage_imports("results").items()}
    plumbing = {"kit.generated", "kit.files"}  # standard library only: how a generated file is written
    third_party = {f: sorted(n for n in names if n.split(".")[0] not in STDLIB | {"agent", "pydantic"}
                          and not any(n == p or n.startswith(p + ".") for p in plumbing))
                   for f, names in stage_imports("results").items()}
    assert {f: v for f, v in found.items() if v} == {} and {f: v for f, v in third_party.items() if v} == {}


def test_presentation_imports_only_the_typed_results_and_itself():
    allowed_libraries = STDLIB | {"agent", "matplotlib", "markdown_it", "rich"}
    found = {f: outside(names, ("agent.bench.results", "agent.bench.presentation")) +
             sorted(n for n in names if n.split(".")[0] not in allowed_libraries)
             for f, names in stage_imports("presentation").items()}
    assert {f: v for f, v in found.items() if v} == {}


IMPURE_LIBRARIES = {"aiohttp", "boto3", "botocore", "strands", "socket", "subprocess", "asyncio", "http", "urllib"}
IMPURE_STAGES = ("agent.bench.clients", "agent.reach", "agent.bench.command.evidence", "agent.bench.command.runner")


@pytest.mark.parametrize("stage", ["grading", "analysis"])
def test_grading_and_analysis_stay_pure(stage):
    """No network, process or cloud library and no client: a pure function of records and run.json."""
    found = {f: sorted(n for n in names if n.split(".")[0] in IMPURE_LIBRARIES or n.startswith(IMPURE_STAGES))
             for f, names in stage_imports(stage).items()}
    assert {f: v for f, v in found.items() if v} == {}


@pytest.mark.parametrize("package", ["agent", "rigs", "stacks", "kit"])
def test_no_folder_holds_more_than_20_modules(package):
    """One kind of thing per folder, at most 20 modules (docs/ARCHITECTURE.md): a folder of more is split by
    concern, so each question has one folder to look in."""
    root = PROJECT_DIR / package
    folders = {d: len(list(d.glob("*.py"))) for d in [root, *root.rglob("*")] if d.is_dir() and d.name != "__pycache__"}
    assert {str(d.relative_to(PROJECT_DIR)): n for d, n in folders.items() if n > 20} == {}


def test_the_commands_start_without_loading_the_models():
    """``python -m agent.run --help`` and ``python -m agent.report --help`` stay fast: pydantic, the parts'
    strands and aiohttp are loaded when a run or a rebuild starts, not to print the options (nor to read
    the registry of parts, which the options may consult)."""
    code = ("import sys, agent.run, agent.report, agent.bench.command.runner, agent.bench.parts.registry; "
            "print(sorted(m for m in ('pydantic', 'strands', 'aiohttp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_DIR, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
