"""The benchmark's parts: each sends its requests through the clients and writes one record per request
to ``requests.jsonl``. Nothing here grades or aggregates."""
