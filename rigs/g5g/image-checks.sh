#!/usr/bin/env bash
# The g5g image's own checks, run by its Dockerfile (no GPU needed for any of them):
#   image-checks torch-arch 7.5   torch carries kernels for compute capability 7.5 (the T4G): fails in
#                                 minutes, before vLLM's compile, instead of at the first CUDA op on the rig
#   image-checks triton-toolchain the runtime stage has what Triton compiles its launcher with at the first
#                                 model load: a C compiler and the Python headers
#   image-checks imports          torch, triton and vllm import (every shared library they load is there)
# Each failure is one line on stderr naming what is missing, and exit status 1.
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
  python3 -c 'import torch, triton, vllm; print("torch", torch.__version__, "triton", triton.__version__, "vllm", vllm.__version__)' \
    || fail "torch, triton or vllm does not import (see the traceback above)"
}

case "${1:-}" in
  torch-arch) torch_arch "${2:?give the compute capability, e.g. 7.5}" ;;
  triton-toolchain) triton_toolchain ;;
  imports) imports ;;
  *) fail "unknown check '${1:-}': give torch-arch CAPABILITY, triton-toolchain or imports" ;;
esac
