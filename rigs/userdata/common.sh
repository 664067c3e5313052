#!/usr/bin/env bash
# Boot steps shared by every EC2 rig. rigs/userdata (__init__.py) renders the boot scripts, an S3 asset, as:
#   generated RIG_* preamble (the catalog's) + this file + the shared files + the runtime's file (vllm.sh,
#   neuronx.sh or neuron_vllm.sh);
# the user data's bootstrap.sh, after its own RIG_* preamble (the stack's), fetches them, checks their sha256 and
# sources them. The runtime file defines check_accelerator, describe_accelerator, describe_engine and start_server,
# then calls main.
#
# Configuration comes only from the RIG_* variables of the two preambles. Never enable
# `set -x` here: fetch_hf_token handles a secret.
set -euo pipefail

readonly STATE_DIR="${RIG_STATE_DIR:-/run/aws-inference}"  # RIG_STATE_DIR: tests only
readonly LOG_DIR=/var/log/aws-inference
readonly USERDATA_LOG=/var/log/aws-inference/user-data.log
INSTANCE_ID=unknown
SHIPPER_PID=""
SIGNALLED=false
FAILED_AT=""
PROBE_ERROR="not probed yet"

log() { printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"; }

imds() {  # imds PATH: one instance-metadata read with an IMDSv2 session token
  local token
  token="$(curl -fsS -m 5 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' \
    http://169.254.169.254/latest/api/token)"
  curl -fsS -m 5 -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/$1"
}

# --- CloudWatch Logs: the user-data log goes to <instance-id>/user-data --------------

ship_logs() {  # send the lines added to the user-data log since the last call (best effort)
  local offset=0 next batch="$STATE_DIR/log-batch.json"
  [[ -f "$STATE_DIR/log-offset" ]] && offset="$(cat "$STATE_DIR/log-offset")"
  next="$(python3 - "$USERDATA_LOG" "$offset" "$batch" <<'PY'
import json, sys, time
path, offset, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, "rb") as handle:
    handle.seek(offset)
    data = handle.read(600_000)
events, used, now = [], 0, int(time.time() * 1000)
for line in data.splitlines(keepends=True):
    if not line.endswith(b"\n") or len(events) == 5000:
        break
    used += len(line)
    events.append({"timestamp": now, "message": line.decode("utf-8", "replace").rstrip("\n") or " "})
with open(out, "w") as handle:
    json.dump(events, handle)
print(offset + used)
PY
)" || return 0
  [[ "$next" != "$offset" ]] || return 0
  if aws logs put-log-events --log-group-name "$RIG_LOG_GROUP" \
      --log-stream-name "$INSTANCE_ID/user-data" --log-events "file://$batch" >/dev/null 2>&1; then
    echo "$next" >"$STATE_DIR/log-offset"
  fi
}

start_log_shipper() {
  aws logs create-log-stream --log-group-name "$RIG_LOG_GROUP" \
    --log-stream-name "$INSTANCE_ID/user-data" >/dev/null 2>&1 || true
  (while sleep 20; do ship_logs || true; done) </dev/null >/dev/null 2>&1 &
  SHIPPER_PID=$!
}

stop_log_shipper() {
  if [[ -n "$SHIPPER_PID" ]]; then
    kill "$SHIPPER_PID" 2>/dev/null || true
    wait "$SHIPPER_PID" 2>/dev/null || true
    SHIPPER_PID=""
  fi
  sleep 1
  ship_logs || true
}

# --- CloudFormation signals ----------------------------------------------------------

signal_cloudformation() {  # signal_cloudformation SUCCESS|FAILURE REASON
  local status="$1" reason="$2" body="$STATE_DIR/wait-signal.json"
  SIGNALLED=true
  # The wait condition carries the reason into the stack events; the Auto Scaling
  # group's creation policy counts the signal.
  python3 - "$status" "$reason" "$INSTANCE_ID" >"$body" <<'PY'
import json, sys
status, reason, unique_id = sys.argv[1:4]
print(json.dumps({"Status": status, "Reason": reason[:900], "UniqueId": unique_id, "Data": reason[:900]}))
PY
  curl -fsS -m 30 --retry 5 -X PUT -H 'Content-Type:' --data-binary "@$body" "$RIG_WAIT_HANDLE" \
    || log "could not reach the wait condition handle"
  aws cloudformation signal-resource --stack-name "$RIG_STACK" \
    --logical-resource-id "$RIG_SIGNAL_RESOURCE" --unique-id "$INSTANCE_ID" --status "$status" \
    || log "could not signal $RIG_SIGNAL_RESOURCE of $RIG_STACK"
}

fail() {  # fail REASON: record it, signal FAILURE with it, stop
  log "FAILED: $1"
  signal_cloudformation FAILURE "$RIG_NAME: $1"
  exit 1
}

on_exit() {
  local status=$?
  if [[ "$SIGNALLED" != true ]]; then
    log "FAILED: user data stopped (exit $status) at ${FAILED_AT:-an unknown step}"
    signal_cloudformation FAILURE "$RIG_NAME: user data stopped (exit $status) at ${FAILED_AT:-an unknown step}"
  fi
  stop_log_shipper
}

install_traps() {  # any unexpected failure still signals FAILURE, naming the failed command
  set -o errtrace
  trap 'FAILED_AT="line $LINENO: $BASH_COMMAND"' ERR
  trap on_exit EXIT
}

# --- host preparation ----------------------------------------------------------------

ensure_aws_cli() {
  command -v aws >/dev/null 2>&1 && return 0
  log "aws CLI missing: installing the aws-cli snap"
  snap install aws-cli --classic || fail "the AMI has no aws CLI and the snap install failed"
}

ensure_swap() {  # a swapfile of RIG_SWAP_GIB where host memory is under 32 GiB
  local mem_kib
  if (( RIG_SWAP_GIB == 0 )); then
    return 0
  fi
  mem_kib="$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
  if (( mem_kib >= 32 * 1024 * 1024 )); then
    log "host memory ${mem_kib} KiB is 32 GiB or more: no swapfile"
    return 0
  fi
  if [[ -n "$(swapon --show --noheadings)" ]]; then
    log "swap already active: $(swapon --show --noheadings | tr '\n' ' ')"
    return 0
  fi
  log "host memory ${mem_kib} KiB: creating a ${RIG_SWAP_GIB} GiB /swapfile"
  fallocate -l "${RIG_SWAP_GIB}G" /swapfile
  chmod 600 /swapfile
  mkswap /swapfile >/dev/null
  swapon /swapfile
  grep -q '^/swapfile ' /etc/fstab || echo '/swapfile none swap sw 0 0' >>/etc/fstab
}

ensure_docker() {
  if ! command -v docker >/dev/null 2>&1; then
    log "docker missing: installing docker.io"
    apt-get -o DPkg::Lock::Timeout=600 update -q
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q docker.io
  fi
  systemctl enable --now docker
}

fetch_hf_token() {  # a gated model's token into a root-only env file: the SSM parameter named, else the secret
  local token
  install -m 600 /dev/null "$STATE_DIR/server.env"
  if [[ -n "$RIG_HF_TOKEN_PARAMETER" ]]; then
    token="$(aws ssm get-parameter --name "$RIG_HF_TOKEN_PARAMETER" --with-decryption \
      --query Parameter.Value --output text 2>"$STATE_DIR/secret-error")" \
      || fail "could not read the Hugging Face token from SSM parameter $RIG_HF_TOKEN_PARAMETER ($(grep -o \
        '[A-Za-z]*Exception' "$STATE_DIR/secret-error" | head -n 1 || true)): it must be a SecureString in \
$RIG_REGION the rig role may read"
    printf 'HF_TOKEN=%s\n' "$token" >"$STATE_DIR/server.env"
    token=""
    log "Hugging Face token read from SSM parameter $RIG_HF_TOKEN_PARAMETER"
    return 0
  fi
  [[ -n "$RIG_HF_TOKEN_SECRET" ]] || return 0
  if token="$(aws secretsmanager get-secret-value --secret-id "$RIG_HF_TOKEN_SECRET" \
      --query SecretString --output text 2>"$STATE_DIR/secret-error")"; then
    printf 'HF_TOKEN=%s\n' "$token" >"$STATE_DIR/server.env"
    log "Hugging Face token read from secret $RIG_HF_TOKEN_SECRET"
  else
    log "no Hugging Face token from $RIG_HF_TOKEN_SECRET ($(grep -o '[A-Za-z]*Exception' \
      "$STATE_DIR/secret-error" | head -n 1 || true)); continuing without one"
  fi
  token=""
}

pull_image() {
  local attempt
  if [[ -n "$RIG_REGISTRY" ]]; then
    aws ecr get-login-password | docker login --username AWS --password-stdin "$RIG_REGISTRY" >/dev/null \
      || fail "could not log in to $RIG_REGISTRY: does the instance role allow ECR pulls?"
  fi
  for attempt in 1 2 3; do
    if docker pull -q "$RIG_IMAGE" >"$STATE_DIR/pull.log" 2>&1; then
      log "pulled $RIG_IMAGE"
      return 0
    fi
    log "pull attempt $attempt of $RIG_IMAGE failed: $(tail -c 300 "$STATE_DIR/pull.log")"
    sleep $((attempt * 20))
  done
  fail "could not pull $RIG_IMAGE: $(tail -c 300 "$STATE_DIR/pull.log" | tr '\n' ' ')"
}

report_rig() {  # one line the agent reads back from this log: what really serves (agent/reach/provenance.py)
  local image
  image="$(docker image inspect -f '{{join .RepoDigests ","}}' "$RIG_IMAGE" 2>/dev/null | cut -d, -f1)" \
    || image=""
  log "rig report: $(describe_accelerator); image=${image:-unknown}"
}

report_engine() {  # the engine's own lines on what it allocated (describe_engine), once it serves
  local line
  while IFS= read -r line; do
    [[ -z "$line" ]] || log "engine report: ${line:0:300}"
  done < <(describe_engine)
}

run_server_container() {  # run_server_container DOCKER_RUN_ARGS...: start RIG_CONTAINER detached
  docker rm -f "$RIG_CONTAINER" >/dev/null 2>&1 || true
  if docker run -d --name "$RIG_CONTAINER" --restart unless-stopped --env-file "$STATE_DIR/server.env" \
      --log-driver awslogs --log-opt "awslogs-region=$RIG_REGION" --log-opt "awslogs-group=$RIG_LOG_GROUP" \
      --log-opt "awslogs-stream=$INSTANCE_ID/server" "$@" >/dev/null; then
    log "started $RIG_CONTAINER; server log: $RIG_LOG_GROUP $INSTANCE_ID/server"
    return 0
  fi
  log "docker could not start $RIG_CONTAINER with the awslogs driver; retrying with local logs only"
  docker rm -f "$RIG_CONTAINER" >/dev/null 2>&1 || true
  docker run -d --name "$RIG_CONTAINER" --restart unless-stopped --env-file "$STATE_DIR/server.env" \
    "$@" >/dev/null || fail "docker run of $RIG_IMAGE failed"
}

# --- readiness: a real chat completion with text (and tokens where required) ----------

chat_probe() {  # one chat completion on the server; sets PROBE_ERROR when it is not good
  local body="$STATE_DIR/probe-response.json" code verdict
  if ! code="$(curl -sS -m 120 -o "$body" -w '%{http_code}' -H 'Content-Type: application/json' \
      --data-binary "@$STATE_DIR/probe-request.json" \
      "http://127.0.0.1:$RIG_PORT/v1/chat/completions" 2>"$STATE_DIR/probe-error")"; then
    PROBE_ERROR="no HTTP answer on port $RIG_PORT: $(tail -c 200 "$STATE_DIR/probe-error")"
    return 1
  fi
  if [[ "$code" != 200 ]]; then
    PROBE_ERROR="HTTP $code: $(head -c 200 "$body" | tr '\n' ' ')"
    return 1
  fi
  if verdict="$(python3 - "$body" "$RIG_REQUIRE_COMPLETION_TOKENS" <<'PY'
import json, sys
path, need_tokens = sys.argv[1], sys.argv[2] == "true"
try:
    with open(path) as handle:
        reply = json.load(handle)
    text = (reply["choices"][0]["message"].get("content") or "").strip()
    tokens = int((reply.get("usage") or {}).get("completion_tokens") or 0)
except Exception as exc:
    print(f"unreadable reply ({type(exc).__name__}): {open(path).read(200)!r}")
    sys.exit(1)
if need_tokens and tokens == 0:
    print("200 OK with zero completion tokens (the known silent Neuron failure)")
    sys.exit(1)
if not text:
    print(f"200 OK with empty text ({tokens} completion tokens)")
    sys.exit(1)
print(f"{tokens} completion tokens: {text[:60]!r}")
PY
)"; then
    PROBE_ERROR=""
    log "chat probe passed: $verdict"
    return 0
  fi
  PROBE_ERROR="$verdict"
  return 1
}

wait_until_ready() {  # probe until a good completion, the container dies, or our deadline
  local deadline=$((RIG_READY_TIMEOUT_SECONDS - 300)) state status restarts code
  python3 - "$RIG_MODEL_ID" >"$STATE_DIR/probe-request.json" <<'PY'
import json, sys
print(json.dumps({"model": sys.argv[1], "max_tokens": 16, "temperature": 0,
                  "messages": [{"role": "user", "content": "Reply with the single word: ok"}]}))
PY
  while (( SECONDS < deadline )); do
    state="$(docker inspect -f '{{.State.Status}} {{.RestartCount}} {{.State.ExitCode}}' \
      "$RIG_CONTAINER" 2>/dev/null || echo "missing 0 0")"
    read -r status restarts code <<<"$state"
    if [[ "$status" == exited || "$status" == dead || "$status" == missing ]] || (( restarts >= 3 )); then
      fail "server container $status after $restarts restarts (exit code $code): $(docker logs --tail 5 \
        "$RIG_CONTAINER" 2>&1 | tr '\n' ' ' | tail -c 500)"
    fi
    if chat_probe; then
      return 0
    fi
    log "not ready: $PROBE_ERROR"
    sleep 15
  done
  fail "no good chat completion within $((deadline / 60)) minutes of boot; last probe: $PROBE_ERROR"
}

main() {
  mkdir -p "$STATE_DIR" "$LOG_DIR"
  chmod 700 "$STATE_DIR"
  exec > >(tee -a "$USERDATA_LOG") 2>&1
  install_traps
  export AWS_DEFAULT_REGION="$RIG_REGION" AWS_REGION="$RIG_REGION" AWS_PAGER=""
  log "rig $RIG_NAME ($RIG_RUNTIME) booting: $RIG_IMAGE serving $RIG_MODEL_ID on port $RIG_PORT"
  INSTANCE_ID="$(imds meta-data/instance-id)"
  ensure_aws_cli
  start_log_shipper
  start_byte_source
  ensure_swap
  check_accelerator
  ensure_docker
  fetch_hf_token
  pull_image
  report_rig
  start_server
  wait_until_ready
  report_engine
  signal_cloudformation SUCCESS "$RIG_NAME answered a chat completion after ${SECONDS}s"
  log "ready after ${SECONDS}s"
}
