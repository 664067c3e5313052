#!/usr/bin/env bash
# The Neuron devices (RIG_NEURON_DEVICES, one a line) of both inf2/trn1 servers; after common.sh.
set -euo pipefail

check_accelerator() {
  local d
  while IFS= read -r d; do
    [[ -e "$d" ]] || fail "Neuron device $d missing; the AMI must be a Neuron DLAMI on inf2/trn1"
  done <<<"$RIG_NEURON_DEVICES"
  log "Neuron devices: $(tr '\n' ' ' <<<"$RIG_NEURON_DEVICES")"
}

describe_accelerator() {  # "accelerator=NAME; count=N; driver=VERSION" for the rig report
  local driver
  driver="$(cat /sys/module/neuron/version 2>/dev/null || modinfo -F version neuron 2>/dev/null || true)"
  printf 'accelerator=AWS Neuron device; count=%s; driver=%s' "$(grep -c . <<<"$RIG_NEURON_DEVICES" || true)" \
    "${driver:-unknown}"
}

device_flags() {  # docker's --device for each, one a line
  local d
  while IFS= read -r d; do
    echo "--device=$d"
  done <<<"$RIG_NEURON_DEVICES"
}
