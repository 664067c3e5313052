#!/usr/bin/env bash
# AWS's vLLM Neuron image on inf2/trn1: NxD Inference compiles the model for RIG_SERVE_FLAGS' shapes as it starts,
# into a host folder per model and flags (a restart loads it). After common.sh and neuron_devices.sh.
set -euo pipefail

STARTED=0

describe_engine() {  # the server's docker-stamped lines around the compile; agent/reach/provenance.py times it
  local logs
  logs="$(docker logs -t "$RIG_CONTAINER" 2>&1 || true)"
  grep -m1 'Unable to find precompiled' <<<"$logs" || true
  grep -m1 -E 'Sharding weights on load|loaded pre-compiled' <<<"$logs" || true
  echo "neuron server: first good answer $((SECONDS - STARTED)) s after it started"
}

start_server() {
  local devices=() flags=() dir
  mapfile -t devices < <(device_flags)
  mapfile -t flags <<<"$RIG_SERVE_FLAGS"
  dir="$(sha256sum <<<"$RIG_MODEL_ID $RIG_SERVE_FLAGS" | cut -c1-16)"
  mkdir -p "/var/lib/neuron-compiled/$dir"
  STARTED=$SECONDS
  run_server_container --ipc=host "${devices[@]}" -e "NEURON_COMPILED_ARTIFACTS=/compiled/$dir" \
    -v /var/lib/neuron-compiled:/compiled -v hf-cache:/root/.cache/huggingface \
    -p "127.0.0.1:$RIG_PORT:$RIG_CONTAINER_PORT" "$RIG_IMAGE" vllm serve "$RIG_MODEL_ID" "${flags[@]}"
}

main
