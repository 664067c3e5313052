#!/usr/bin/env bash
# vLLM's OpenAI-compatible server in a container on an NVIDIA GPU rig (g6; g5g with the
# image built by the InferenceG5gImage stack). Runs after the preamble and common.sh.
set -euo pipefail

check_accelerator() {
  local gpus
  gpus="$(nvidia-smi -L 2>&1)" \
    || fail "no NVIDIA GPU visible (nvidia-smi: ${gpus:0:200}); the AMI must be a GPU DLAMI with the driver"
  log "GPU: $gpus"
}

describe_accelerator() {  # "accelerator=NAME; count=N; driver=VERSION" for the rig report
  local gpus first
  gpus="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)" || gpus=""
  first="$(head -n 1 <<<"$gpus")"
  if [[ -z "$first" ]]; then
    printf 'accelerator=unknown; count=0; driver=unknown'
    return 0
  fi
  printf 'accelerator=%s; count=%s; driver=%s' "${first%%, *}" "$(grep -c . <<<"$gpus")" "${first##*, }"
}

describe_engine() {  # vLLM's KV cache lines, for the rig report (agent/reach/provenance.py reads them)
  local logs
  logs="$(docker logs "$RIG_CONTAINER" 2>&1 || true)"
  grep 'GPU KV cache size: ' <<<"$logs" | tail -n 1 || true
  grep 'Maximum concurrency for ' <<<"$logs" | tail -n 1 || true
}

start_server() {
  local flags=()
  if [[ -n "$RIG_SERVE_FLAGS" ]]; then
    mapfile -t flags <<<"$RIG_SERVE_FLAGS"
  fi
  # Published on loopback only: the rig is reached through an SSM port forward.
  run_server_container --gpus all --ipc=host \
    -p "127.0.0.1:$RIG_PORT:$RIG_CONTAINER_PORT" \
    -v hf-cache:/root/.cache/huggingface \
    "$RIG_IMAGE" --model "$RIG_MODEL_ID" "${flags[@]}"
}

main
