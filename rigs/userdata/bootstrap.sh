#!/usr/bin/env bash
# After the RIG_* preamble: fetch the boot scripts (an S3 asset), run them only if their sha256 is the synthesized one.
set -euo pipefail

BOOT_SCRIPTS="${RIG_STATE_DIR:-/run/aws-inference}/boot-scripts.sh"  # RIG_STATE_DIR, RIG_LOG_DIR: tests only
BOOT_LOG="${RIG_LOG_DIR:-/var/log/aws-inference}/user-data.log"

boot_log() { printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" | tee -a "$BOOT_LOG"; }

refuse_boot() {  # the line, and the wait condition's FAILURE with it
  boot_log "FAILED: $1"
  curl -fsS -m 30 --retry 5 -X PUT -H 'Content-Type:' --data-binary "{\"Status\": \"FAILURE\", \"UniqueId\": \
\"boot\", \"Reason\": \"$RIG_NAME: $1\", \"Data\": \"\"}" "$RIG_WAIT_HANDLE" || boot_log "wait handle unreachable"
  exit 1
}

mkdir -p "${BOOT_SCRIPTS%/*}" "${BOOT_LOG%/*}"
chmod 700 "${BOOT_SCRIPTS%/*}"
command -v aws >/dev/null || snap install aws-cli --classic >/dev/null || refuse_boot "no aws CLI"
error="$(aws s3 cp --only-show-errors --region "$RIG_REGION" "$RIG_BOOT_SCRIPTS_URL" "$BOOT_SCRIPTS" 2>&1)" \
  || refuse_boot "could not fetch the boot scripts $RIG_BOOT_SCRIPTS_URL: $(tr '\n' ' ' <<<"$error" \
  | tr -d '\042\134' | cut -c1-300)"  # no quote or backslash inside the signal's JSON
got="$(sha256sum "$BOOT_SCRIPTS" | cut -d' ' -f1)"
[[ "$got" == "$RIG_BOOT_SCRIPTS_SHA256" ]] || refuse_boot "boot scripts $RIG_BOOT_SCRIPTS_URL have sha256 $got, \
not $RIG_BOOT_SCRIPTS_SHA256 as synthesized: not running them"
boot_log "boot scripts $RIG_BOOT_SCRIPTS_URL: sha256 $got as synthesized"
# shellcheck source=/dev/null
source "$BOOT_SCRIPTS"
