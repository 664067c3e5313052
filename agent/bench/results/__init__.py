"""Typed results: the models of ``requests.jsonl`` records, of ``run.json`` and of ``summary.json``, their
generated JSON Schemas (``requests.schema.json``, ``run.schema.json``, ``summary.schema.json``, written by
``python -m agent.bench.results.schema --write``), the latency target (``target.py``), and how numbers are
written.

The lowest layer of the benchmark: it imports nothing else from ``agent.bench``, so every stage
may use it. The parts write records, the analysis reads them and fills in a
:class:`~agent.bench.results.summary.Summary`, and presentation reads only that.
"""
