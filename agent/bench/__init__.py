"""The benchmark: graded tool use, the orchestrator check, streamed chat timings, cost,
the bandwidth ceiling and the evidence folder.

The pipeline is split the way vLLM's benchmarks are: request generation
(``workload``), timing (``timing``), running the parts (``counting``, ``orchestrator``,
``chat``), aggregation (``grading``, ``stats``, ``cost``, ``ceiling``, ``summary``) and
reporting (``report``). ``runner`` is what ``python -m agent.run`` calls.
"""
