"""The Neuron boot against a stand-in for AWS's vLLM Neuron image: it downloads the checkpoint, then serves the local
path under the model's name.

The stand-in ``docker`` runs ``--entrypoint hf IMAGE download ...`` as the image's own ``hf`` would: the arguments
parsed as huggingface_hub's CLI parses them in the line the image pins (< 1.0, under transformers 4.5x: argparse,
``--exclude`` taking several patterns, ``src/huggingface_hub/cli/download.py``), the token read only from the
``--env-file``, the files written under ``--local-dir`` through the ``-v`` mount. The server's ``vllm serve`` line is
recorded and read back by the tests (its first argument the model's path, ``--served-model-name`` the id clients
use). Host folders are kept under the test's own root.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from rigs.userdata import SCRIPT_DIR, environment
from tests.rigs.userdata.test_userdata import NEURON_VLLM_RIGS, FakeEndpoints, boot, run_boot_functions, server  # noqa: F401

IMAGE = """\
import argparse, json, os, sys
root, log = {root!r}, {log!r}
args = sys.argv[1:]
with open(log, "a") as handle:
    handle.write(json.dumps(args) + "\\n")
if args[0] != "run":
    sys.exit(0)
mounts = dict(v.split(":", 1) for flag, v in zip(args, args[1:]) if flag == "-v")
env_file = args[args.index("--env-file") + 1]
if "--entrypoint" in args:
    assert args[args.index("--entrypoint") + 1] == "hf", args
    rest = args[args.index(os.environ["RIG_IMAGE"]) + 1:]
    parser = argparse.ArgumentParser(prog="hf")
    commands = parser.add_subparsers(dest="command", required=True)
    download = commands.add_parser("download")
    download.add_argument("repo_id")
    download.add_argument("filenames", nargs="*")
    for option in ("--repo-type", "--revision", "--cache-dir", "--local-dir", "--token"):
        download.add_argument(option)
    download.add_argument("--include", nargs="*")
    download.add_argument("--exclude", nargs="*")
    download.add_argument("--force-download", action="store_true")
    download.add_argument("--quiet", action="store_true")
    download.add_argument("--max-workers", type=int, default=8)
    parsed = parser.parse_args(rest)
    token = dict(line.split("=", 1) for line in open(env_file).read().split()).get("HF_TOKEN")
    if token != "hf_good":
        print("huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url "
              f"https://huggingface.co/api/models/{{parsed.repo_id}}/revision/main.", file=sys.stderr)
        sys.exit(1)
    container, host = next((c, h) for h, c in mounts.items() if parsed.local_dir.startswith(c + "/"))
    local = root + host + parsed.local_dir[len(container):]
    os.makedirs(local, exist_ok=True)
    for name in ("config.json", "model-00001-of-00002.safetensors", "original/consolidated.00.pth",
                 "consolidated.safetensors"):
        if not any(__import__("fnmatch").fnmatch(name, pattern) for pattern in parsed.exclude or []):
            os.makedirs(os.path.dirname(os.path.join(local, name)), exist_ok=True)
            open(os.path.join(local, name), "w").write(parsed.repo_id)
    print(local)
"""
"""A ``docker`` whose ``run --rm --entrypoint hf IMAGE download ...`` is huggingface_hub's ``hf download``; every call
is logged as JSON."""


def neuron_rig_boot(tmp_path: Path, port: int, token: str) -> tuple[int, str, list[list[str]], Path]:
    """Run the Neuron boot's ``start_server`` for Llama 3.1 8B on inf2.8xlarge; returns (rc, log, docker calls, root)."""
    rig = NEURON_VLLM_RIGS[0]
    env = environment(rig, boot(rig))
    root, calls = tmp_path / "root", tmp_path / "docker-calls"
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    (fakebin / "docker").write_text(f"#!{sys.executable}\n" + IMAGE.format(root=str(root), log=str(calls)))
    (fakebin / "docker").chmod(0o755)
    names = ("RIG_NEURON_DEVICES", "RIG_SERVE_FLAGS", "RIG_IMAGE", "RIG_MODEL_ID", "RIG_CONTAINER",
             "RIG_CONTAINER_PORT")
    commands = "\n".join([f"export {k}={shlex.quote(env[k])}" for k in names] + [
        f'printf "HF_TOKEN=%s\\n" {token} > "$STATE_DIR/server.env"',
        f"source {SCRIPT_DIR / 'neuron_devices.sh'}", f"main() {{ :; }}\nsource {SCRIPT_DIR / 'neuron_vllm.sh'}",
        f'mkdir() {{ command mkdir "${{@:1:$#-1}}" "{root}${{!#}}"; }}', "start_server"])
    rc, out, _ = run_boot_functions(tmp_path, port, commands)
    logged = [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
    return rc, out, logged, root


def test_the_checkpoint_is_downloaded_with_the_token_then_served_from_its_path_under_the_models_name(server,
                                                                                                    tmp_path):
    rc, out, calls, root = neuron_rig_boot(tmp_path, server.server_port, "hf_good")
    assert rc == 0, out
    runs = [call for call in calls if call[0] == "run"]
    assert [call[1] for call in runs] == ["--rm", "-d"]  # the download, then the server
    served = runs[1][runs[1].index("serve") + 1:]
    model = "meta-llama/Llama-3.1-8B-Instruct"
    assert served[0] == f"/n/models/{model}" and served[1:3] == ["--served-model-name", model]
    assert served[3:] == list(NEURON_VLLM_RIGS[0].serve_flags)
    downloaded = root / "var/lib/neuron/models" / model
    assert sorted(p.name for p in downloaded.rglob("*") if p.is_file()) == [
        "config.json", "model-00001-of-00002.safetensors"]  # not Meta's original/ nor Mistral's consolidated copy
    assert "/var/lib/neuron:/n" in runs[1] and f"127.0.0.1:{server.server_port}:8000" in runs[1]
    [artifacts] = [a for a in runs[1] if a.startswith("NEURON_COMPILED_ARTIFACTS=")]
    assert (root / "var/lib/neuron" / artifacts.split("=/n/", 1)[1]).is_dir()
    assert " download took " in out and not FakeEndpoints.signals


def test_a_download_the_hub_refuses_fails_the_boot_in_one_line_before_the_server_starts(server, tmp_path):
    rc, out, calls, _ = neuron_rig_boot(tmp_path, server.server_port, "hf_wrong")
    assert rc == 1 and not [call for call in calls if "-d" in call]
    [signal] = FakeEndpoints.signals
    assert signal["Status"] == "FAILURE"
    assert signal["Reason"].startswith("inf2: could not download meta-llama/Llama-3.1-8B-Instruct: "
                                       "huggingface_hub.errors.GatedRepoError: 401 Client Error."), signal
