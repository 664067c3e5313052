#!/usr/bin/env bash
# AWS's vLLM Neuron image on inf2/trn1; after common.sh and neuron_devices.sh.
set -euo pipefail

STARTED=0

describe_engine() {  # compile lines for agent/reach/provenance.py
  local logs
  logs="$(docker logs -t "$RIG_CONTAINER" 2>&1 || true)"
  grep -m1 'Unable to find precompiled' <<<"$logs" || true
  grep -m1 -E 'Sharding weights on load|loaded pre-compiled' <<<"$logs" || true
  echo "neuron server: first good answer $((SECONDS - STARTED)) s after it started"
}

start_server() {  # the checkpoint first, then its local path (docs/own-model.md)
  local devices=() flags=() dir
  mapfile -t devices < <(device_flags)
  mapfile -t flags <<<"$RIG_SERVE_FLAGS"
  dir="compiled/$(sha256sum <<<"$RIG_MODEL_ID $RIG_SERVE_FLAGS" | cut -c1-16)"
  mkdir -p "/var/lib/neuron/$dir"
  STARTED=$SECONDS
  docker run --rm --env-file "$STATE_DIR/server.env" -v /var/lib/neuron:/n --entrypoint hf "$RIG_IMAGE" download \
    "$RIG_MODEL_ID" --local-dir "/n/models/$RIG_MODEL_ID" --quiet --exclude 'original/*' 'consolidated*' \
    >"$STATE_DIR/hf.log" 2>&1 || fail "could not download $RIG_MODEL_ID: $(tail -c 300 "$STATE_DIR/hf.log")"
  log "download took $((SECONDS - STARTED)) s"
  STARTED=$SECONDS
  run_server_container --ipc=host "${devices[@]}" -e "NEURON_COMPILED_ARTIFACTS=/n/$dir" -v /var/lib/neuron:/n \
    -p "127.0.0.1:$RIG_PORT:$RIG_CONTAINER_PORT" "$RIG_IMAGE" \
    vllm serve "/n/models/$RIG_MODEL_ID" --served-model-name "$RIG_MODEL_ID" "${flags[@]}"
}

main
