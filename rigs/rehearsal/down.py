"""The rehearsal's down step: ``cdk destroy`` of exactly the stacks it created, then the check that
nothing of ours is left billing.

*What it created* is what CloudFormation shows after the rehearsal and did not show before it
(:func:`created_since`), for the app's rig and base stacks only; a stack that was there before
(a user's own rig, a base network) is never destroyed. Each rig stack is destroyed in the region
it is in (``-c region.<rig>=R``; a copy in a further region is the app's ``<Stack>-<region>``),
with ``--exclusively`` so that nothing else is pulled in, and the command is run again while any
of them is left (a deletion that fails once, as a base network's does on moto, is retried).
"""

from __future__ import annotations

import os
import shlex
import signal
import threading
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Callable, Mapping, Sequence

from kit import processes, utc
from rigs import aws
from rigs.catalog.model import load_catalog
from rigs.contract import BASE_STACK_PREFIX, REGIONS
from rigs.deploy.cdk_cli import CDK, context_arg
from rigs.estate.whereabouts import Whereabouts
from rigs.placement.placement import PROJECT_DIR

ATTEMPTS = 4
"""How many times the destroy command is run while something it should remove is left."""


def created_since(before: Whereabouts, after: Whereabouts) -> dict[str, list[str]]:
    """The app's rig and base stacks that exist now and did not before: stack name -> its new regions."""
    rig_stacks = {rig.stack_name for rig in load_catalog().deployable()}
    created: dict[str, list[str]] = defaultdict(list)
    for region in REGIONS:
        for name in after.stacks.get(region, {}):
            ours = name in rig_stacks or name.startswith(BASE_STACK_PREFIX)
            if ours and name not in before.stacks.get(region, {}):
                created[name].append(region)
    return dict(created)


def destroy_commands(stacks: Mapping[str, Sequence[str]], output: Path | None = None,
                     cdk: str = CDK) -> list[list[str]]:
    """The ``cdk destroy`` commands that remove exactly ``stacks`` (name -> regions): the rig stacks
    first, then the base stacks (a base stack cannot go while a rig of its region uses it, and a
    base stack that fails must not keep a rig billing)."""
    by_stack = {rig.stack_name: rig.name for rig in load_catalog().deployable()}
    rigs: list[str] = []
    bases: list[str] = []
    context: list[str] = []
    for name, regions in sorted(stacks.items()):
        if not regions:
            continue
        rig = by_stack.get(name)
        if rig is None:  # a base stack: one per region, named after it
            bases.append(name)
            continue
        context += context_arg(f"region.{rig}", regions[0])
        rigs += [name] + [f"{name}-{region}" for region in regions[1:]]
    commands = []
    for index, ids in enumerate((rigs, bases)):
        if ids:
            command = [cdk, "destroy", *ids, "--exclusively", "--force", *(context if ids is rigs else [])]
            if output is not None:
                command += ["--output", f"{output}-{index + 1}"]
            commands.append(command)
    return commands


def shown(command: Sequence[str]) -> str:
    """A command as a user types it in the project's folder."""
    words = list(command)
    if words and words[0] == CDK:
        words[0] = "./scripts/cdk"
    cut = words.index("--output") if "--output" in words else len(words)
    return shlex.join(words[:cut])


class Destroyer:
    """Runs the destroy command, again while something is left, and says when each stack went."""

    def __init__(self, folder: Path, locate: Callable[[], Whereabouts], say: Callable[[str], None],
                 running: processes.Running, clients: aws.Clients | None = None, cdk: str = CDK,
                 env: Mapping[str, str] | None = None) -> None:
        self.folder = folder
        self.env = {**(os.environ if env is None else env), "CI": "true"}
        """What the destroy command runs with (offline, moto's endpoint and credentials: passed down, never put
        into this process's environment)."""
        self.locate = locate
        self.say = say
        self.running = running
        self.clients = clients
        self.cdk = cdk
        self.left: dict[str, list[str]] = {}
        """What is still there, as far as this destroyer knows (read by the second Ctrl-C)."""
        self._lock = threading.Lock()
        self._runs = 0

    def destroy(self, stacks: Mapping[str, Sequence[str]], started: datetime | None = None) -> dict[tuple[str, str], str]:
        """Destroy ``stacks``; return (stack, region) -> when it was gone (UTC ISO). What is left stays in ``left``."""
        self.left = {name: list(regions) for name, regions in stacks.items() if regions}
        gone: dict[tuple[str, str], str] = {}
        for attempt in range(1, ATTEMPTS + 1):
            if not self.left:
                break
            self._runs += 1
            log = self.folder / f"cdk-destroy-{self._runs}.log"
            for command in destroy_commands(self.left, self.folder / f"cdk.out-{self._runs}", self.cdk):
                self.say(f"down: {shown(command)} (attempt {attempt}, log: {log.name})")
                self._run(command, log)
            where = self.locate()
            now = utc.iso_seconds()
            for name, regions in list(self.left.items()):
                still = [r for r in regions if r in where.regions_of(name)] if where.complete else regions
                for region in set(regions) - set(still):
                    gone[(name, region)] = self._deleted_at(name, region, started) or now
                if still:
                    self.left[name] = still
                else:
                    del self.left[name]
        return gone

    def _run(self, command: list[str], log: Path) -> int:
        self.folder.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as handle:
            handle.write(f"$ {' '.join(command)}\n")
            handle.flush()
            process = self.running.add(processes.spawn(command, log=handle, cwd=PROJECT_DIR,
                                                       env=self.env))
            try:
                return process.wait()
            except BaseException:  # a second Ctrl-C: the command is stopped, never left running
                processes.stop(process, signal.SIGINT, grace_s=10.0)
                raise
            finally:
                self.running.discard(process)

    def _deleted_at(self, name: str, region: str, since: datetime | None) -> str | None:
        """CloudFormation's deletion time of the stack in ``region`` (the latest after ``since``), where it gives one."""
        if self.clients is None:
            return None
        try:
            summaries = aws.paginate(self.clients("cloudformation", region), "list_stacks", "StackSummaries",
                                     StackStatusFilter=["DELETE_COMPLETE"])
        except Exception:  # noqa: BLE001 - the time the destroy returned stands in
            return None
        times = [s["DeletionTime"] for s in summaries if s.get("StackName") == name and s.get("DeletionTime")
                 and (since is None or s["DeletionTime"] >= since)]
        return utc.iso_seconds(max(times)) if times else None
