"""The sections of ``REPORT.md``, one module each, in the order the report shows them
(:mod:`agent.bench.presentation.report`). Each formats the typed summary; none computes a figure."""
