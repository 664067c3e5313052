"""Every AWS call the code makes, read from its source (no import, no AWS): which service, which operation, where.

A call is found where the code names an operation of a client whose service it can tell:

- ``clients("ec2", region).describe_instances``, ``session.client("sts")``, ``boto3.client("ecr")``: the
  service is the string given to the client factory;
- ``ec2 = clients("ec2", region)`` then ``ec2.describe_instances``: names bound in the same function;
- a parameter or name spelled as the service (``ecr``, ``codebuild``, ``pricing_client``) or its usual
  short name (``cfn``, ``quotas``): :data:`ALIASES`;
- ``self.client`` in a class whose ``service`` (or ``SERVICE``) attribute names the service;
- an operation, paginator or waiter given by name next to its client or service:
  ``aws.paginate(ec2, "describe_vpcs", ...)``, ``ec2.get_paginator("describe_vpcs")``,
  ``self._wait(ec2, "instance_terminated")``, ``self._call("ssm", region, "describe_instance_information")``.

An attribute, or a string given to a call, that names an operation of a service the code uses
(``describe_…``, ``delete_…``) where the service cannot be told is reported as unresolved, so a
new call the walk cannot place fails the test instead of escaping it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import botocore.session
from botocore import xform_name

from tests.conftest import parse_file

ALIASES = {"cfn": "cloudformation", "quotas": "service-quotas", "secrets": "secretsmanager"}
FACTORIES = {"client", "clients", "_client", "boto_client"}
CLIENT_HELPERS = {"get_paginator", "get_waiter", "meta", "exceptions", "can_paginate", "close"}
AWS_VERB = re.compile(r"^(describe|list|get|delete|create|put|update|start|stop|terminate|send|signal|detach|"
                      r"disassociate|remove|invoke|converse|batch|run|modify|attach|associate|tag|untag)_[a-z0-9_]+$")


@lru_cache(maxsize=None)
def _botocore() -> botocore.session.Session:
    return botocore.session.get_session()


@lru_cache(maxsize=None)
def services() -> frozenset[str]:
    return frozenset(_botocore().get_available_services())


@lru_cache(maxsize=None)
def operations(service: str) -> dict[str, str]:
    """Python method name -> operation name."""
    return {xform_name(op): op for op in _botocore().get_service_model(service).operation_names}


@lru_cache(maxsize=None)
def waiters(service: str) -> dict[str, str]:
    """Waiter name as boto3 spells it -> the operation it polls."""
    try:
        model = _botocore().get_waiter_model(service)
    except Exception:  # noqa: BLE001 - a service without waiters
        return {}
    return {xform_name(name): model.get_waiter(name).operation for name in model.waiter_names}


@dataclass(frozen=True)
class Call:
    service: str
    operation: str
    where: str


def _text(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class _Walker(ast.NodeVisitor):
    def __init__(self, path: str, used: frozenset[str], constants: dict[str, str]) -> None:
        self.path, self.used, self.constants = path, used, constants
        self.scopes: list[dict[str, str]] = [{}]
        self.classes: list[str | None] = [None]
        self.calls: list[Call] = []
        self.unresolved: list[str] = []

    def _service_text(self, node: ast.AST) -> str | None:
        text = _text(node) or (self.constants.get(node.id) if isinstance(node, ast.Name) else None)
        return text if text in self.used else None

    def service_of(self, node: ast.AST) -> str | None:
        """The service of the client ``node`` is, when the code says it."""
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in FACTORIES:
                return next(filter(None, map(self._service_text, node.args)), None)
            return None
        if isinstance(node, ast.Name):
            for scope in reversed(self.scopes):
                if node.id in scope:
                    return scope[node.id]
            name = node.id.removesuffix("_client")
            return ALIASES.get(name) or (name if name in self.used else None)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return self.classes[-1] if node.attr == "client" else None
        return None

    def _record(self, service: str, name: str, node: ast.AST) -> bool:
        operation = operations(service).get(name) or waiters(service).get(name)
        if operation is not None:
            self.calls.append(Call(service, operation, f"{self.path}:{node.lineno}"))
        return operation is not None

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        service = None
        for item in node.body:
            if isinstance(item, ast.Assign) and any(isinstance(t, ast.Name) and t.id.lower() == "service"
                                                    for t in item.targets):
                service = self._service_text(item.value)
        self.classes.append(service)
        self.generic_visit(node)
        self.classes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scopes.append({})
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> None:
        service = self.service_of(node.value)
        for target in node.targets:
            if service and isinstance(target, ast.Name):
                self.scopes[-1][target.id] = service
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        service = self.service_of(node.value)
        if node.attr not in CLIENT_HELPERS and not (service and self._record(service, node.attr, node)) \
                and AWS_VERB.match(node.attr) and any(node.attr in operations(s) for s in self.used):
            self.unresolved.append(f"{self.path}:{node.lineno}: {ast.unparse(node)}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        given = [self.service_of(arg) or self._service_text(arg) for arg in node.args]
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("get_paginator", "get_waiter", "generate_presigned_url"):
            given.append(self.service_of(node.func.value))
        for service in {s for s in given if s}:
            for arg in node.args:
                name = _text(arg)
                if name and name != service:
                    self._record(service, name, node)
        if not any(given):
            named = [t for t in map(_text, node.args) if t and AWS_VERB.match(t)
                     and any(t in operations(s) for s in self.used)]
            self.unresolved += [f"{self.path}:{node.lineno}: {name!r} in {ast.unparse(node.func)}(...)" for name in named]
        self.generic_visit(node)


def _module_constants(tree: ast.Module) -> dict[str, str]:
    return {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for target in node.targets if isinstance(target, ast.Name)}


def used_services(paths: Iterable[Path]) -> frozenset[str]:
    """The services the code makes clients of: strings given to client factories, and ``SERVICE`` constants."""
    found: set[str] = set()
    for path in paths:
        tree = parse_file(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if name in FACTORIES:
                    found.update(t for t in map(_text, node.args) if t in services())
        found.update(v for k, v in _module_constants(tree).items() if k == "SERVICE" and v in services())
    return frozenset(found)


def aws_calls(paths: Iterable[Path]) -> tuple[list[Call], list[str]]:
    """Every call found in ``paths``, and every operation-like attribute whose client the walk could not tell."""
    paths = list(paths)
    used = used_services(paths)
    calls: list[Call] = []
    unresolved: list[str] = []
    for path in paths:
        tree = parse_file(path)
        walker = _Walker(str(path), used, _module_constants(tree))
        walker.visit(tree)
        calls += walker.calls
        unresolved += walker.unresolved
    return calls, unresolved
