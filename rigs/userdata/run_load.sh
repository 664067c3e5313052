#!/usr/bin/env bash
# --load-from rig: what SSM Run Command runs on the instance (rigs/userdata/load_generator.py puts the LOAD_* lines
# before it). It fetches the load generator (the rig's asset, checked against its sha256) and the job through
# pre-signed URLs, runs the job under the Python of the server's own image against the server on the instance's
# loopback, and puts the results where the agent reads them (the base stack's bucket). Nothing is left on the disk.
set -euo pipefail

: "${LOAD_GENERATOR_URL:?}" "${LOAD_GENERATOR_SHA256:?}" "${LOAD_JOB_URL:?}" "${LOAD_RESULT_URL:?}"
: "${LOAD_CONTAINER:?}"  # the server's container: its image's Python runs the load generator
LOAD_PYTHON="${LOAD_PYTHON:-}"  # tests and the offline stand-in only: this Python instead of the image's

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fetch() {  # fetch URL FILE: a pre-signed GET (or a file:// URL offline)
  curl -fsS -m 120 --retry 3 -o "$2" "$1" || { echo "run_load: could not fetch ${1%%\?*}" >&2; exit 3; }
}

fetch "$LOAD_GENERATOR_URL" "$work/load_generator.zip"
got="$(sha256sum "$work/load_generator.zip" | cut -d' ' -f1)"
if [[ "$got" != "$LOAD_GENERATOR_SHA256" ]]; then
  echo "run_load: the load generator has sha256 $got, not $LOAD_GENERATOR_SHA256 as synthesized" >&2
  exit 3
fi
fetch "$LOAD_JOB_URL" "$work/job.json"
mkdir "$work/src"
if command -v unzip >/dev/null; then
  unzip -q "$work/load_generator.zip" -d "$work/src"
else
  python3 -m zipfile -e "$work/load_generator.zip" "$work/src"
fi

if [[ -n "$LOAD_PYTHON" ]]; then
  (cd "$work/src" && "$LOAD_PYTHON" -m agent.bench.parts.load_generator "$work/job.json" "$work/out.jsonl")
else
  image="$(docker inspect --format '{{.Config.Image}}' "$LOAD_CONTAINER")" \
    || { echo "run_load: no container $LOAD_CONTAINER on this instance: is the server running?" >&2; exit 3; }
  docker run --rm --network host -v "$work:/load" -w /load/src --entrypoint python3 "$image" \
    -m agent.bench.parts.load_generator /load/job.json /load/out.jsonl
fi

curl -fsS -m 300 --retry 3 -X PUT -H 'Content-Type:' --upload-file "$work/out.jsonl" "$LOAD_RESULT_URL" >/dev/null \
  || { echo "run_load: could not put the results" >&2; exit 3; }
echo "run_load: $(wc -l <"$work/out.jsonl") lines put"
