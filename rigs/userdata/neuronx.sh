#!/usr/bin/env bash
# The hand-ported Gemma 4 torch_neuronx server on an inf2/trn1 rig. Its graph geometry is
# compiled in, so it takes no serve flags; it needs the Neuron devices passed through.
# Runs after the preamble and common.sh.
set -euo pipefail

check_accelerator() {
  local device
  while IFS= read -r device; do
    [[ -e "$device" ]] || fail "Neuron device $device missing; the AMI must be a Neuron DLAMI on inf2/trn1"
  done <<<"$RIG_NEURON_DEVICES"
  log "Neuron devices: $(tr '\n' ' ' <<<"$RIG_NEURON_DEVICES")"
}

describe_accelerator() {  # "accelerator=NAME; count=N; driver=VERSION" for the rig report
  local driver count
  driver="$(cat /sys/module/neuron/version 2>/dev/null || modinfo -F version neuron 2>/dev/null || true)"
  count="$(grep -c . <<<"$RIG_NEURON_DEVICES" || true)"
  printf 'accelerator=AWS Neuron device; count=%s; driver=%s' "$count" "${driver:-unknown}"
}

describe_engine() {  # the hand-ported server logs no allocation of its own
  return 0
}

start_server() {
  local device devices=()
  while IFS= read -r device; do
    devices+=("--device=$device")
  done <<<"$RIG_NEURON_DEVICES"
  # Published on loopback only: the rig is reached through an SSM port forward.
  run_server_container --ipc=host "${devices[@]}" \
    -v gemma4-data:/data \
    -p "127.0.0.1:$RIG_PORT:$RIG_CONTAINER_PORT" \
    "$RIG_IMAGE"
}

main
