#!/usr/bin/env bash
# The g5g image's own checks, run by its Dockerfile:
#   image-checks torch-arch 7.5   torch carries kernels for compute capability 7.5 (the T4G): fails in
#                                 minutes, before vLLM's compile, instead of at the first CUDA op on the rig
#   image-checks triton-toolchain the runtime stage has what Triton compiles its launcher with at the first
#                                 model load: a C compiler and the Python headers
#   image-checks imports          torch, torchvision, triton and vllm import (every shared library they load is there)
#   image-checks torchvision 0.27.0  torchvision at that version imports beside the torch built here, its compiled
#                                 ops loaded: vLLM's use_existing_torch.py drops it from vLLM's requirements
#   image-checks processor MODEL  transformers loads MODEL's processor (AutoProcessor.from_pretrained on a folder
#                                 of the model's files but its weights, fetched from the Hub): a multimodal
#                                 processor missing a piece (Gemma 4's imports torchvision) fails the build, not
#                                 the rig's first boot
# Each failure is one line on stderr naming what is missing, and exit status 1 (no GPU is needed for any of them).
set -euo pipefail

fail() {
  echo "image check failed: $1" >&2
  exit 1
}

torch_arch() {  # torch_arch 7.5: torch._C._cuda_getArchFlags() lists sm_75 (read from the build, no GPU asked)
  local wanted="sm_${1/./}" flags version
  version="$(python3 -c 'import torch; print(torch.__version__)')" || fail "torch does not import"
  flags="$(python3 -c 'import torch; print(torch._C._cuda_getArchFlags() or "")')" \
    || fail "torch $version has no CUDA build (torch._C._cuda_getArchFlags is missing)"
  if [[ " $flags " != *" $wanted "* ]]; then
    fail "torch $version has no kernels for $wanted (its architectures: ${flags:-none}); build it with TORCH_CUDA_ARCH_LIST including $1"
  fi
  echo "torch $version architectures: $flags"
}

triton_toolchain() {  # a C compiler and Python.h, as Triton's launcher build needs them
  local compiler include
  compiler="$(gcc --version 2>/dev/null | head -n 1)" || fail "no C compiler (gcc --version failed): install gcc"
  include="$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  [[ -f "$include/Python.h" ]] || fail "no Python headers ($include/Python.h is missing): install python3-dev"
  echo "C compiler: $compiler; Python headers: $include/Python.h"
}

imports() {
  python3 -c 'import torch, torchvision, triton, vllm; print("torch", torch.__version__, "torchvision", torchvision.__version__, "triton", triton.__version__, "vllm", vllm.__version__)' \
    || fail "torch, torchvision, triton or vllm does not import (see the traceback above)"
}

torchvision_check() {  # torchvision_check 0.27.0: that version, beside this torch, its C++ ops loaded
  local said
  said="$(python3 - "$1" <<'PY'
import sys
try:
    import torch, torchvision
    from torchvision.extension import _has_ops
except Exception as exc:
    print(f"torchvision does not import beside torch: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    sys.exit(1)
if torchvision.__version__.split("+")[0] != sys.argv[1]:
    print(f"torchvision {torchvision.__version__} is not {sys.argv[1]}, the release paired with this torch")
    sys.exit(1)
if not _has_ops():
    print(f"torchvision {torchvision.__version__} has no compiled ops: its C++ extension did not load against torch "
          f"{torch.__version__}; build it from source against this torch")
    sys.exit(1)
print(f"torchvision {torchvision.__version__} with its ops, on torch {torch.__version__}")
PY
)" || fail "$said"
  echo "$said"
}

processor() {  # processor MODEL: AutoProcessor.from_pretrained on the model's files but its weights
  local said
  said="$(python3 - "$1" <<'PY'
import sys, tempfile
model = sys.argv[1]
try:
    from huggingface_hub import snapshot_download
    from transformers import AutoProcessor
    with tempfile.TemporaryDirectory() as folder:
        snapshot_download(model, local_dir=folder, allow_patterns=["*.json", "*.jinja", "*.model", "*.txt"])
        loaded = AutoProcessor.from_pretrained(folder)
except Exception as exc:
    print(f"{model}'s processor does not load: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    sys.exit(1)
parts = [type(getattr(loaded, name)).__name__ for name in ("image_processor", "video_processor", "feature_extractor",
                                                           "tokenizer") if getattr(loaded, name, None) is not None]
print(f"{model}: {type(loaded).__name__} ({', '.join(parts)})")
PY
)" || fail "$said"
  echo "$said"
}

case "${1:-}" in
  torch-arch) torch_arch "${2:?give the compute capability, e.g. 7.5}" ;;
  triton-toolchain) triton_toolchain ;;
  imports) imports ;;
  torchvision) torchvision_check "${2:?give the torchvision version, e.g. 0.27.0}" ;;
  processor) processor "${2:?give the model id, e.g. google/gemma-4-E2B-it}" ;;
  *) fail "unknown check '${1:-}': give torch-arch CAPABILITY, triton-toolchain, imports, torchvision VERSION or processor MODEL" ;;
esac
