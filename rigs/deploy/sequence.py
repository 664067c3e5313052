"""The way to a deploy, one for ``python -m rigs up`` and ``python -m rigs rehearse``.

1. **Doctor** (``up --doctor``; always in a rehearsal): the account checked read-only, its
   table shown, and the regions each rig can deploy in. What to do with a rig that can deploy
   nowhere is the caller's: ``up`` refuses to start, a rehearsal leaves the rig out.
2. **Preflight**, once: the placement is recorded for the rigs that need it (every rig when
   ``fresh``, else those with nothing recorded for their instance type). When the doctor ran, its checks *are*
   preflight's (the doctor runs :func:`rigs.account.preflight.check` for offerings and quotas), so the
   placement is recorded from them (:func:`rigs.account.preflight.place`) without asking AWS again;
   otherwise preflight runs here.
3. **The regions to try** per rig: its recorded candidates that the doctor allows, in order.
   ``Up`` (:mod:`.up`) then deploys the rigs region after region.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from rigs.account.doctor import DoctorReport, render, run_doctor
from rigs.account.preflight import PreflightReport, place, run_preflight
from rigs.catalog.model import DeployableRig
from rigs.placement import placement

Plans = dict[str, tuple[DeployableRig, list[placement.Candidate]]]
"""Rig name -> the rig and the regions it tries, in order (what :meth:`rigs.deploy.up.Up.run` takes)."""


class DeploySequence:
    """Doctor, then preflight once, then the regions to try, for one session.

    ``show`` prints the doctor's table (a rich renderable).
    """

    def __init__(self, session: Any, show: Callable[[Any], None], placement_file: Path | None = None) -> None:
        self.session = session
        self.show = show
        self.placement_file = placement_file
        """Where the placement is read and recorded (None: the user's, :func:`rigs.placement.placement.placement_path`)."""
        self.doctor_report: DoctorReport | None = None
        self.preflight_report: PreflightReport | None = None
        """The preflight this sequence recorded a placement from, if it needed one."""
        self.allowed: dict[str, list[str]] = {}
        """Rig name -> the regions the doctor allows (empty: nowhere); no entry when the doctor did not check it."""
        self._ignored: tuple[str, ...] = ()

    def doctor(self, rigs: Sequence[DeployableRig], ignore: Sequence[str] = ()) -> dict[str, list[str]]:
        """Run the doctor and show its table; rig name -> the regions it can deploy in (empty: nowhere).

        ``ignore`` names checks whose failures do not count (``--bootstrap`` fixes "CDK bootstrap").
        """
        self.doctor_report = run_doctor(rigs, lambda: self.session)
        self.show(render(self.doctor_report))
        self._ignored = tuple(ignore)
        self.allowed = {rig.name: self.doctor_report.deployable(rig.name, ignore) for rig in rigs}
        return dict(self.allowed)

    def blockers(self, rig: str) -> list[str]:
        """The doctor's checks that stop ``rig`` in every region it may use."""
        report = self.doctor_report
        if report is None:
            return []
        return sorted({f.check for region in report.rig_regions.get(rig, ()) for f in report.blockers(rig, region)
                       if f.check not in self._ignored})

    def plans(self, rigs: Sequence[DeployableRig], fresh: bool,
              announce: Callable[[list[DeployableRig]], None] | None = None) -> Plans:
        """Each rig with the regions it tries: recorded by preflight (run for the rigs that need it: every
        rig when ``fresh``, else those with nothing recorded for their instance type; ``announce`` hears which,
        first), less the regions the doctor rules out."""
        recorded = placement.load(self.placement_file)
        need = [rig for rig in rigs if fresh or _stale(recorded.get(rig.name), rig)]
        if need:
            if announce is not None:
                announce(need)
            self.preflight_report = self._preflight(need)
            recorded = placement.load(self.placement_file)
        plans: Plans = {}
        for rig in rigs:
            entry = recorded.get(rig.name)
            allowed = self.allowed.get(rig.name)
            plans[rig.name] = (rig, [c for c in (entry.candidates if entry else ())
                                     if allowed is None or c.region in allowed])
        return plans

    def _preflight(self, rigs: Sequence[DeployableRig]) -> PreflightReport:
        report = self.doctor_report
        if report is not None and report.stopped is None and all(rig.name in report.rig_regions for rig in rigs):
            return place(rigs, report.preflight, path=self.placement_file)
        return run_preflight(rigs, self.session, path=self.placement_file)


def _stale(entry: placement.RigPlacement | None, rig: DeployableRig) -> bool:
    """Whether the recorded placement cannot be used for ``rig``: nothing recorded, or recorded for another instance
    type (a model moved to a bigger size; a file that did not record the type)."""
    return entry is None or entry.instance_type != rig.instance_type
