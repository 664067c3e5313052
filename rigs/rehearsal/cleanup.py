"""The rehearsal's down step: ``cdk destroy`` of exactly the stacks it created (:class:`.down.Destroyer`),
then the check that nothing of ours is left billing in the four regions
(:func:`rigs.estate.inventory.discover`). A second Ctrl-C during it stops it and says what is still up and
the commands that remove it.
"""

from __future__ import annotations

import signal
from typing import Callable

from rigs import aws
from rigs.contract import REGIONS
from rigs.placement import placement
from rigs.rehearsal.down import Destroyer, created_since, destroy_commands, shown
from rigs.rehearsal.state import State


class CleanupInterrupted(BaseException):
    """A second Ctrl-C during the down step."""


def destroy_created(state: State, only_rigs: bool = True) -> bool:
    """Destroy what the rehearsal created (only the rig stacks, or everything); True when none is left."""
    assert state.before is not None
    created = created_since(state.before, state.locate())
    rig_stacks = {rig.stack_name for rig in state.catalog.deployable()}
    wanted = {name: regions for name, regions in created.items() if not only_rigs or name in rig_stacks}
    if not wanted:
        return True
    if state.destroyer is None:
        state.destroyer = Destroyer(state.folder / "down", state.locate, state.say, state.running,
                                    aws.Clients(state.session), env=state.command_env())
    gone = state.destroyer.destroy(wanted, state.started)
    for phase in state.phases:
        for line in phase.timelines:
            if line.stack and line.region and (line.stack, line.region) in gone and not line.destroyed:
                line.destroyed = gone[(line.stack, line.region)]
    return not state.destroyer.left


def down(state: State, interrupt: Callable[[int, object], None]) -> bool | None:
    """Destroy everything created, then check what is left. False: something is left; None: interrupted again.

    ``interrupt`` is the SIGTERM handler put back afterwards (the rehearsal's)."""
    def second_interrupt(signum: int, frame: object) -> None:
        raise CleanupInterrupted

    previous = signal.signal(signal.SIGINT, second_interrupt)
    signal.signal(signal.SIGTERM, second_interrupt)
    try:
        state.say("down: destroying what this rehearsal created")
        clean = destroy_created(state, only_rigs=False)
        clean = check_left(state) and clean
    except CleanupInterrupted:
        state.running.stop_all()
        say_what_is_left(state)
        return None
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, interrupt)
    return clean


def check_left(state: State) -> bool:
    """Everything of ours in the four regions: say what still bills, and whether this rehearsal left it."""
    from rigs.estate.inventory import discover

    inventory = discover(state.session, REGIONS, state.prices())
    state.left = {"billing": [], "not_billing": [r.label() for r in inventory.resources if not r.billing],
                  "not_checked": list(inventory.problems),
                  "stacks": dict(state.destroyer.left) if state.destroyer is not None else {}}
    mine = {rig.name for phase in state.phases for rig, _ in phase.plans.values()}
    theirs = {name for name, reason in state.skipped.items() if "already deployed" in reason}
    billing = [r for r in inventory.resources if r.billing]
    left = [r for r in billing if r.rig not in theirs]
    for resource in (r for r in billing if r.rig in theirs):
        state.say(f"down: still billing, from before the rehearsal (left alone): {resource.label()} in "
                  f"{resource.region}, ${resource.hourly_usd:.4f}/h")
    for problem in inventory.problems:
        state.say(f"down: not checked: {problem}")
    state.left["billing"] = [f"{r.label()} in {r.region}" for r in left]
    if left:
        for resource in left:
            state.say(f"down: LEFT BILLING: {resource.label()} in {resource.region}, ${resource.hourly_usd:.4f}/h"
                      + (" (a rig of this rehearsal)" if resource.rig in mine else ""))
        state.say("down: remove it with `python -m rigs sweep --yes` (it deletes everything tagged ours); the "
                  "lifetime limit stops each rig anyway")
        return False
    others = [r for r in inventory.resources if not r.billing]
    suffix = (f" ({len(others)} resource(s) of ours that do not bill remain: "
              + ", ".join(sorted({r.kind for r in others})) + "; `python -m rigs status` lists them)") \
        if others else ""
    state.say(f"down: nothing of ours left billing in {', '.join(REGIONS)}" + suffix)
    where = state.locate()
    if not state.options.offline and where.complete:  # the placement file forgets the rigs that are gone
        placement.reconcile({rig.name: where.regions_of(rig.stack_name) for rig in state.catalog.deployable()})
    return True


def say_what_is_left(state: State) -> None:
    """After a second Ctrl-C: what this rehearsal created that is still up, and the commands that remove it."""
    left = state.destroyer.left if state.destroyer is not None else {}
    if not left and state.before is not None:
        try:
            left = created_since(state.before, state.locate())
        except Exception:  # noqa: BLE001 - say what is known
            left = {}
    state.say("interrupted again: the clean-up stopped.")
    if state.options.offline:
        state.say("offline: nothing bills; moto's server stops with this command and everything in it goes with it")
        return
    if not left:
        state.say("nothing this rehearsal created was found still up; check with `python -m rigs status`")
        return
    state.say("still up, created by this rehearsal (a deletion may be under way): "
              + "; ".join(f"{name} in {', '.join(regions)}" for name, regions in sorted(left.items())))
    state.say("remove it with:")
    for command in destroy_commands(left):
        state.say(f"  {shown(command)}")
    state.say("  python -m rigs status        # then check; `python -m rigs sweep --yes` removes anything of ours")
    state.say("each rig's lifetime limit stops it anyway (`python -m rigs status` shows when)")
