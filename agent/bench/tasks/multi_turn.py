"""BFCL's multi-turn tasks: load them from the pinned ``bfcl-eval`` package, draw the seeded sample every
backend runs, and give each task a fresh instance of its simulated APIs.

A task is several user turns over executable APIs (a file system, messaging, posting, tickets, trading, travel
booking, vehicle control, math), with an initial state and the calls that solve each turn. The four categories
(``base``, ``miss_func``: a function is held back until a later turn, ``miss_param``: a turn lacks a value the
model must ask for, ``long_context``: the APIs hold long content) are the package's own files, read in place; the
APIs are its own classes (``bfcl_eval/eval_checker/multi_turn_eval/func_source_code/``), set up as BFCL's
``execute_multi_turn_func_call`` sets them up, and a call's result is written as it writes it, so that what the
agent sees is what BFCL's own runs see (github.com/ShishirPatil/gorilla, ``berkeley-function-call-leaderboard``).
"""

from __future__ import annotations

import copy
import importlib
import json
import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final, Mapping

from .bfcl_cases import DISTRIBUTION, PACKAGE, SETUP_HINT, BfclUnavailableError

CATEGORIES: Final = ("base", "miss_func", "miss_param", "long_context")
"""``--tasks-category``: BFCL's ``multi_turn_<category>``."""
TASKS_PER_CATEGORY: Final = 200
"""Tasks in each category of the pinned version: ``--tasks-n`` is at most this, checked before the package is read
(a test counts them)."""
ADDED_FUNCTIONS_TURN: Final = "I have updated some more functions you can choose from. What about now?"
"""The user turn of a ``miss_func`` task's held-back turn, BFCL's own (``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``
in ``bfcl_eval/constants/default_prompts.py``)."""


class TaskUnavailableError(BfclUnavailableError):
    """A category's file or an API class is missing from the installed package."""


@dataclass(frozen=True, slots=True)
class Task:
    """One multi-turn task.

    Attributes:
        id: BFCL's id, e.g. ``multi_turn_base_12``.
        category: One of :data:`CATEGORIES`.
        turns: The user turns, in order (a held-back turn of ``miss_func`` is :data:`ADDED_FUNCTIONS_TURN`).
        functions: The function documents offered from the start.
        added: Function documents offered from a turn on (``{turn index: [docs]}``, ``miss_func`` only).
        involved_classes: The API classes the task uses.
        initial_config: Their initial state, by class.
        ground_truth: The calls that solve each turn, as BFCL writes them (``["cd(folder='document')", ...]``).
    """

    id: str
    category: str
    turns: tuple[str, ...]
    functions: tuple[dict[str, Any], ...]
    added: Mapping[int, tuple[dict[str, Any], ...]]
    involved_classes: tuple[str, ...]
    initial_config: Mapping[str, Any]
    ground_truth: tuple[tuple[str, ...], ...]

    @property
    def index(self) -> int:
        return int(self.id.rsplit("_", 1)[1])

    @property
    def long_context(self) -> bool:
        return self.category == "long_context"


def _read_lines(resource: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in resource.read_text(encoding="utf-8").splitlines() if line.strip()]


def _backend_config() -> Any:
    try:
        from bfcl_eval.constants import executable_backend_config
    except ImportError as exc:
        raise TaskUnavailableError(f"{DISTRIBUTION} cannot be imported ({exc}); {SETUP_HINT}") from None
    return executable_backend_config


@lru_cache(maxsize=None)
def _docs(class_name: str) -> tuple[dict[str, Any], ...]:
    import importlib.resources

    name = _backend_config().MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
    return tuple(_read_lines(importlib.resources.files(PACKAGE) / "data" / "multi_turn_func_doc" / name))


def _turn_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")


def _task(category: str, row: dict[str, Any], truth: list[list[str]]) -> Task:
    """One row as a :class:`Task`, its functions offered as BFCL's ``populate_test_cases_with_predefined_functions``
    offers them (every function of the involved classes, less those held back)."""
    functions = [doc for c in row["involved_classes"] for doc in _docs(c)]
    held = {int(turn): set(names) for turn, names in (row.get("missed_function") or {}).items()}
    added = {turn: tuple(f for f in functions if f["name"] in names) for turn, names in held.items()}
    withheld = set().union(*held.values()) if held else set()
    turns = tuple(ADDED_FUNCTIONS_TURN if i in held and not t else _turn_text(t) for i, t in enumerate(row["question"]))
    return Task(id=row["id"], category=category, turns=turns,
                functions=tuple(f for f in functions if f["name"] not in withheld), added=added,
                involved_classes=tuple(row["involved_classes"]), initial_config=row.get("initial_config") or {},
                ground_truth=tuple(tuple(t) for t in truth))


@lru_cache(maxsize=None)
def load_tasks(category: str) -> tuple[Task, ...]:
    """Every task of ``category``, in BFCL's order.

    Raises:
        TaskUnavailableError: ``bfcl-eval`` is not installed, or lacks the category (the message says how to install it).
    """
    import importlib.resources

    name = f"BFCL_v4_multi_turn_{category}.json"
    try:
        data = importlib.resources.files(PACKAGE) / "data"
        rows = _read_lines(data / name)
        answers = {a["id"]: a["ground_truth"] for a in _read_lines(data / "possible_answer" / name)}
    except ModuleNotFoundError:
        raise TaskUnavailableError(f"the {DISTRIBUTION} package is not installed; {SETUP_HINT}") from None
    except FileNotFoundError:
        raise TaskUnavailableError(f"{DISTRIBUTION} has no {name}; {SETUP_HINT}") from None
    return tuple(_task(category, row, answers[row["id"]]) for row in rows)


def sample_tasks(category: str, n: int, seed: int) -> list[Task]:
    """``n`` tasks of ``category`` drawn with ``Random("<seed>:multi_turn_<category>")``, in BFCL's order: the same
    tasks for every backend and every run with this seed."""
    tasks = load_tasks(category)
    drawn = random.Random(f"{seed}:multi_turn_{category}").sample(tasks, min(n, len(tasks)))
    return sorted(drawn, key=lambda t: t.index)


def call_text(name: str, arguments: Mapping[str, Any]) -> str:
    """A call as BFCL's handlers write a decoded call (``convert_to_function_call``): ``name(k=repr(v),...)``, the
    form its checker executes."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


def result_text(value: Any) -> str:
    """A call's result as BFCL's ``execute_multi_turn_func_call`` writes it: a string as it is, a dict as JSON,
    anything else by ``str``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


@dataclass
class Environment:
    """A fresh instance of each API class of one task, in its initial state; :meth:`call` runs one call on it.

    Raises (on construction):
        TaskUnavailableError: an API class cannot be imported.
    """

    task: Task
    instances: dict[str, Any] = field(default_factory=dict)
    methods: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        config = _backend_config()
        for class_name in self.task.involved_classes:
            try:
                module = importlib.import_module(config.CLASS_FILE_PATH_MAPPING[class_name])
            except ImportError as exc:
                raise TaskUnavailableError(f"{class_name} cannot be imported ({exc}); {SETUP_HINT}") from None
            instance = getattr(module, class_name)()
            if class_name not in config.STATELESS_CLASSES:
                instance._load_scenario(copy.deepcopy(dict(self.task.initial_config.get(class_name, {}))),
                                        long_context=self.task.long_context)
            self.instances[class_name] = instance
            self.methods.update({name: getattr(instance, name) for name in dir(instance)
                                 if not name.startswith("_") and callable(getattr(instance, name))})

    def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Run ``name(**arguments)`` on the task's APIs; the result, or the error, as BFCL writes it."""
        method = self.methods.get(name)
        if method is None:
            return f"Error during execution: name '{name}' is not defined"
        try:
            return result_text(method(**arguments))
        except Exception as exc:  # noqa: BLE001 - the API's own error is the tool's answer, as in BFCL
            return f"Error during execution: {exc}"
