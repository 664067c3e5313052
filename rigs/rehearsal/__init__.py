"""``python -m rigs rehearse``: plan and estimate, up with the small model, benchmark, optionally the big
model, down, and the timeline with the rehearsal's own cost (:mod:`rigs.rehearsal.flow`)."""
