"""The benchmark's parts: each sends its requests through the clients and writes one record per request
to ``requests.jsonl``; one module a part, each a :class:`agent.bench.parts.part.Part` registered once
in :mod:`agent.bench.parts.registry`. Nothing here grades or aggregates."""
