"""Analysis: ``summary.json`` as a pure function of ``requests.jsonl`` and ``run.json`` (figures,
intervals, capacity under a target, cost, the recommendation)."""
