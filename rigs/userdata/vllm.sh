#!/usr/bin/env bash
# vLLM's OpenAI-compatible server in a container on an NVIDIA GPU rig (g6; g5g with the
# image built by the InferenceG5gImage stack). Runs after the boot scripts' preamble and common.sh.
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

readonly GPU_PROBE='import torch
x = torch.ones(1024, device="cuda")
major, minor = torch.cuda.get_device_capability(0)
print(f"torch {torch.__version__} ran a CUDA op on {torch.cuda.get_device_name(0)} (sm_{major}{minor}): {float((x + x).sum()):g}")'

check_image_on_gpu() {  # one CUDA op in the server image before vLLM starts: a missing kernel is one line
  local capability out reason
  capability="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1)" || capability=""
  if out="$(docker run --rm --gpus all --entrypoint python3 "$RIG_IMAGE" -c "$GPU_PROBE" 2>&1)"; then
    log "GPU check: $(tail -n 1 <<<"$out")"
    return 0
  fi
  reason="$(grep -m 1 -E '^[A-Za-z_.]+(Error|Exception)\b' <<<"$out" | cut -c1-200 || true)"
  if grep -q "no kernel image is available" <<<"$out"; then
    fail "this image has no kernels for sm_${capability/./} (the GPU's compute capability ${capability:-unknown}): ${reason}"
  fi
  fail "a CUDA op in the image failed on the GPU before vLLM started: ${reason:-$(tail -n 1 <<<"$out" | cut -c1-200)}"
}

start_server() {
  local flags=()
  check_image_on_gpu
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
