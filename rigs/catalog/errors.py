"""The catalog's errors, without the models (so a command can catch them before the catalog is loaded)."""

from __future__ import annotations

from kit.command import UsageError


class CatalogError(ValueError):
    """The catalog is invalid. ``problems`` lists every problem, each with its field path."""

    def __init__(self, problems: list[str], source: str) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} problem(s) in the rig catalog:\n{lines}")


class UnknownRigError(UsageError, KeyError):
    """A rig name that is not in the catalog (bad input: exit 2)."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(f"unknown rig {name!r}; known rigs: {', '.join(known)}")

    def __str__(self) -> str:
        return str(self.args[0])
