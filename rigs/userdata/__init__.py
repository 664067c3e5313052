"""An EC2 rig's boot: the real bash files in this folder, rendered from the catalog, in two parts.

The **boot scripts** (:func:`boot_scripts`) ship as a CDK S3 asset (``stacks/parts/boot_scripts.py``): a preamble
of the ``RIG_*`` settings the catalog entry decides (:func:`served_settings`: the model, its flags, the devices),
then ``common.sh``, ``byte_source.sh`` (the tunnel's byte source, ``agent/reach/tunnel.py``), the files the runtime
shares with another (``neuron_devices.sh`` for the two Neuron servers) and the runtime's own (``vllm.sh``,
``neuronx.sh`` or ``neuron_vllm.sh``), in that order.

The **user data** (:func:`render`) is ``#!/usr/bin/env bash``, a preamble of the settings the stack decides
(:func:`stack_settings`: where to signal and log, the image, the asset's URL and sha256), then ``bootstrap.sh``:
it fetches the boot scripts from S3, checks their sha256 against ``RIG_BOOT_SCRIPTS_SHA256`` (computed here at
synth) and runs them in the same shell only when it matches, so a changed or substituted object never runs; a
mismatch is one line in the user-data log and the deploy's failure reason.

Each preamble exports its settings sorted, each value ``shlex``-quoted. The bash files read configuration only from
those variables and are never string-templated, so each is shellcheck-clean on its own and the rendering is a pure
function of its inputs. The user data stays small (at most :data:`USER_DATA_LIMIT_BYTES`, a quarter of EC2's 16 KB)
whatever the scripts or a model's flags grow to; the stack checks it at synth with every deploy-time value at its
longest.

Values only the stack knows (its name, the wait-condition URL, the log group, the asset's S3 URL) arrive in
:class:`BootSettings`; they may be CDK tokens, which resolve to plain strings inside the
quotes at synth or deploy time. The Hugging Face token itself never appears: only the
name of the SSM SecureString parameter (``-c hf_token_parameter``) or Secrets Manager secret it is read from at
boot.
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass
from pathlib import Path

from rigs.catalog.model import Ec2Rig
from rigs.catalog.runtimes import RUNTIMES, Boot
from rigs.contract import HF_TOKEN_SECRET

SCRIPT_DIR = Path(__file__).parent
SHEBANG = "#!/usr/bin/env bash"
EC2_USER_DATA_BYTES = 16 * 1024
"""EC2's own limit on raw user data (before base64)."""
USER_DATA_LIMIT_BYTES = 4 * 1024
"""This project's limit on a rig's user data: the preamble and the bootstrap, with room to grow; the boot scripts
themselves ship as an asset and have no such limit."""
BOOTSTRAP = SCRIPT_DIR / "bootstrap.sh"

class UserDataError(ValueError):
    """The user data cannot be rendered from these settings."""


@dataclass(frozen=True, slots=True)
class BootSettings:
    """What the stack adds to the catalog entry: where to signal, log and pull from.

    Attributes:
        region: the region the rig runs in.
        stack_name: the rig's CloudFormation stack (for ``signal-resource``).
        signal_resource: logical id of the Auto Scaling group with the creation policy.
        wait_handle_url: the wait-condition handle that carries a failure reason.
        log_group: the CloudWatch log group for the user-data and server logs.
        image: the server image reference to pull: ``repo@sha256:…`` where pinned, else ``repo:tag``.
        registry: an ECR registry host to log in to first; empty for public images.
        hf_token_secret: the Secrets Manager secret name of the optional HF token.
        hf_token_parameter: the SSM SecureString parameter holding a gated model's HF token (read first; the boot
            fails without it); empty for none.
        ready_timeout_seconds: the stack's readiness timeout; the script gives up 5 min before.
        boot_scripts_url: ``s3://bucket/key`` of the boot scripts' asset (:func:`boot_scripts`).
        boot_scripts_sha256: the sha256 of that object's bytes (:func:`boot_scripts_sha256`), checked before
            they run.
    """

    region: str
    stack_name: str
    signal_resource: str
    wait_handle_url: str
    log_group: str
    image: str
    ready_timeout_seconds: int
    boot_scripts_url: str
    boot_scripts_sha256: str
    registry: str = ""
    hf_token_secret: str = HF_TOKEN_SECRET
    hf_token_parameter: str = ""


def served_settings(rig: Ec2Rig) -> dict[str, str]:
    """The ``RIG_*`` variables the catalog entry decides (what is served, and how): the boot scripts' own preamble,
    so the user data's size does not grow with a model's flags or a rig's devices."""
    for flag in rig.serve_flags:
        if "\n" in flag or not flag:
            raise UserDataError(f"rig {rig.name}: serve flag {flag!r} is empty or spans lines")
    server = _boot(rig)
    return {
        "RIG_RUNTIME": rig.runtime,
        "RIG_MODEL_ID": rig.model_id,
        "RIG_SERVE_FLAGS": "\n".join(rig.serve_flags),
        "RIG_PORT": str(rig.port),
        "RIG_CONTAINER_PORT": str(server.container_port),
        "RIG_CONTAINER": server.container_name,
        "RIG_NEURON_DEVICES": "\n".join(rig.neuron_devices),
        "RIG_REQUIRE_COMPLETION_TOKENS": "true" if server.require_completion_tokens else "false",
        "RIG_SWAP_GIB": str(rig.swap_gib),
    }


def stack_settings(rig: Ec2Rig, boot: BootSettings) -> dict[str, str]:
    """The ``RIG_*`` variables the stack decides (where to signal, log and pull from, and the boot scripts' object):
    the user data's preamble."""
    return {
        "RIG_NAME": rig.name,
        "RIG_REGION": boot.region,
        "RIG_STACK": boot.stack_name,
        "RIG_SIGNAL_RESOURCE": boot.signal_resource,
        "RIG_WAIT_HANDLE": boot.wait_handle_url,
        "RIG_LOG_GROUP": boot.log_group,
        "RIG_READY_TIMEOUT_SECONDS": str(boot.ready_timeout_seconds),
        "RIG_IMAGE": boot.image,
        "RIG_REGISTRY": boot.registry,
        "RIG_HF_TOKEN_SECRET": boot.hf_token_secret,
        "RIG_HF_TOKEN_PARAMETER": boot.hf_token_parameter,
        "RIG_BOOT_SCRIPTS_URL": boot.boot_scripts_url,
        "RIG_BOOT_SCRIPTS_SHA256": boot.boot_scripts_sha256,
    }


def environment(rig: Ec2Rig, boot: BootSettings) -> dict[str, str]:
    """Every ``RIG_*`` variable the bash files read, as strings: the stack's and the catalog entry's."""
    return {**stack_settings(rig, boot), **served_settings(rig)}


def _boot(rig: Ec2Rig) -> Boot:
    """How ``rig``'s runtime boots (:mod:`rigs.catalog.runtimes`).

    Raises:
        UserDataError: a runtime no EC2 rig boots.
    """
    found = RUNTIMES.get(rig.runtime)
    if found is None or found.boot is None:
        raise UserDataError(f"rig {rig.name}: no user data for runtime {rig.runtime!r}")
    return found.boot


def preamble(variables: dict[str, str], source: str = "rigs/catalog.yaml") -> str:
    """``export NAME=value`` lines, sorted by name, each value shell-quoted, under a line naming their ``source``."""
    lines = [f"# Generated by rigs/userdata from {source}; do not edit.", "set -euo pipefail"]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in sorted(variables.items())]
    return "\n".join(lines) + "\n"


def _body(path: Path) -> str:
    """A bash file without its shebang line (the rendered script has one)."""
    text = path.read_text(encoding="utf-8")
    if text.startswith("#!"):
        text = text.split("\n", 1)[1]
    return text if text.endswith("\n") else text + "\n"


def script_files(rig: Ec2Rig) -> tuple[Path, ...]:
    """The bash files of this rig's boot scripts, in order."""
    server = _boot(rig)
    return (SCRIPT_DIR / "common.sh", SCRIPT_DIR / "byte_source.sh", *(SCRIPT_DIR / name for name in server.shared),
            SCRIPT_DIR / server.script)


def boot_scripts(rig: Ec2Rig) -> str:
    """The boot scripts' asset: a preamble of :func:`served_settings`, then the rig's bash files in order, each under
    a header naming it. The user data's bootstrap sources it after its own preamble (:func:`stack_settings`); the last
    file ends by calling ``main``."""
    parts = [f"{SHEBANG}\n", preamble(served_settings(rig))]
    for path in script_files(rig):
        parts.append(f"# --- {path.name} ---\n" + _body(path))
    return "".join(parts)


def boot_scripts_sha256(rig: Ec2Rig) -> str:
    """The sha256 (hex) of :func:`boot_scripts`' bytes, as the bootstrap computes it from the fetched object."""
    return hashlib.sha256(boot_scripts(rig).encode("utf-8")).hexdigest()


def render_body(rig: Ec2Rig, boot: BootSettings) -> str:
    """The user data without its shebang line: the preamble, then the bootstrap."""
    return preamble(stack_settings(rig, boot)) + f"# --- {BOOTSTRAP.name} ---\n" + _body(BOOTSTRAP)


def render(rig: Ec2Rig, boot: BootSettings) -> str:
    """The whole user-data script for concrete ``boot`` values.

    Raises:
        UserDataError: it is over :data:`USER_DATA_LIMIT_BYTES`.
    """
    script = f"{SHEBANG}\n{render_body(rig, boot)}"
    check_size(rig.name, len(script.encode("utf-8")))
    return script


def check_size(rig_name: str, size: int) -> None:
    """Refuse user data of ``size`` bytes over :data:`USER_DATA_LIMIT_BYTES`, in one line with the fix."""
    if size > USER_DATA_LIMIT_BYTES:
        raise UserDataError(f"rig {rig_name}: its user data would be {size:,} bytes, over the "
                            f"{USER_DATA_LIMIT_BYTES:,} this project allows (EC2 takes {EC2_USER_DATA_BYTES:,}): what grew belongs in the boot "
                            "scripts (rigs/userdata/*.sh, shipped as an S3 asset), not in the RIG_* settings or "
                            "bootstrap.sh")
