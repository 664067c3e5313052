#!/usr/bin/env bash
# The hand-ported Gemma 4 torch_neuronx server on an inf2/trn1 rig. Its graph geometry is
# compiled in, so it takes no serve flags; it needs the Neuron devices passed through.
# Runs after the preamble, common.sh and neuron_devices.sh.
set -euo pipefail

describe_engine() {  # the hand-ported server logs no allocation of its own
  return 0
}

start_server() {
  local devices=()
  mapfile -t devices < <(device_flags)
  # Published on loopback only: the rig is reached through an SSM port forward.
  run_server_container --ipc=host "${devices[@]}" \
    -v gemma4-data:/data \
    -p "127.0.0.1:$RIG_PORT:$RIG_CONTAINER_PORT" \
    "$RIG_IMAGE"
}

main
