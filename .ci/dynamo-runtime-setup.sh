#!/usr/bin/env bash
# Fetches the FULL Dynamo runtime (ai-dynamo-runtime, pinned) for the Dynamo request-plane tests and
# benchmarks (issue 33): our Python workers and clients (interop/dynamo_worker.py, interop/dynamo_client.py)
# use the real `dynamo.runtime` (DistributedRuntime, dynamo_worker; its Rust extension dynamo/_core.abi3.so)
# and the real `dynamo.nixl_connect`. The whole wheel is unpacked into .ci-cache/dynamo/runtime-VERSION/
# together with what it requires (pydantic, uvloop; pinned) and NIXL's `nixl` meta package; nothing is
# installed into any Python environment. Called by .ci/dynamo-setup.sh, which prints its exports too.
#
#   .ci/dynamo-runtime-setup.sh    # prints export DYNAMO_RUNTIME_PATH=... DYNAMO_RUNTIME_PYTHON=...
#
# Run a worker or client with
#   PYTHONPATH="$NIXL_PYTHON_PATH:$DYNAMO_RUNTIME_PATH" "$DYNAMO_RUNTIME_PYTHON" interop/dynamo_worker.py ...
# (NIXL_PYTHON_PATH from .ci/nixl-setup.sh: only the encode mode and nixl_connect reads need it).
# uvloop and pydantic_core are compiled for one Python: DYNAMO_RUNTIME_PYTHON is the python3 whose pip
# installed them (major.minor recorded in the cache; another Python gets a fresh install beside it).
# No GPU, etcd or NATS is needed: DYN_DISCOVERY_BACKEND=file with DYN_FILE_KV=<dir> (or etcd with
# ETCD_ENDPOINTS; .ci/etcd-setup.sh). The upstream process may crash at exit where the host has rdma-core
# installed (libnl rtnl_tc_unregister): judge a Python worker or client by what it printed, not its exit code.
#
# Variables: DYNAMO_RUNTIME_VERSION (default 1.6.1), PYDANTIC_VERSION (default 2.12.5), UVLOOP_VERSION
# (default 0.22.1), NIXL_META_VERSION (default 1.5.1), PIP (default pip3), PYTHON (default python3).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${DYNAMO_RUNTIME_VERSION:-1.6.1}"
pydantic_version="${PYDANTIC_VERSION:-2.12.5}"
uvloop_version="${UVLOOP_VERSION:-0.22.1}"
nixl_meta_version="${NIXL_META_VERSION:-1.5.1}"
pip="${PIP:-pip3}"
python="$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')"
py_tag="$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
cache="$root/.ci-cache"
dest="$cache/dynamo/runtime-$version-py$py_tag"
log() { echo "dynamo-runtime-setup: $*" >&2; }

if [[ ! -f "$dest/dynamo/_core.abi3.so" || ! -f "$dest/dynamo/runtime/__init__.py" ]]; then
  tmp="$cache/downloads/dynamo-runtime-$version"
  rm -rf "$tmp"; mkdir -p "$tmp"
  log "downloading ai-dynamo-runtime==$version from PyPI (~75 MB; unpacked ~240 MB)"
  # One abi3 wheel serves every CPython >= 3.10.
  "$pip" download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
      --platform manylinux_2_28_x86_64 --dest "$tmp" "ai-dynamo-runtime==$version" >&2
  whl="$(ls "$tmp"/ai_dynamo_runtime-"$version"-*.whl | head -n 1)"
  rm -rf "$dest"; mkdir -p "$dest"
  "$python" - "$whl" "$dest" <<'PY'
import sys, zipfile
whl, dest = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    # The package and its metadata; not the 10 MB of SBOM and third-party licence texts.
    for info in z.infolist():
        name = info.filename
        if name.startswith("dynamo/") or name.endswith((".dist-info/METADATA", ".dist-info/WHEEL",
                                                         ".dist-info/RECORD", ".dist-info/licenses/LICENSE")):
            z.extract(info, dest)
PY
  chmod -R u+rwX "$dest"
  rm -rf "$tmp"
fi

if [[ ! -d "$dest/pydantic" || ! -d "$dest/uvloop" ]]; then
  log "installing pydantic==$pydantic_version and uvloop==$uvloop_version beside the runtime (for Python $py_tag)"
  "$pip" install --quiet --disable-pip-version-check --no-warn-conflicts --target "$dest" \
      "pydantic==$pydantic_version" "uvloop==$uvloop_version" >&2
fi
if [[ ! -f "$dest/nixl/__init__.py" ]]; then
  log "installing NIXL's meta package nixl==$nixl_meta_version (no dependencies: nixl_cu12 is NIXL_PYTHON_PATH)"
  "$pip" install --quiet --disable-pip-version-check --no-deps --target "$dest" "nixl==$nixl_meta_version" >&2
fi

# The extension loads and the runtime's Python API is there (no runtime is started: that needs the loop).
if ! PYTHONPATH="$dest" "$python" -c 'from dynamo.runtime import DistributedRuntime, dynamo_worker' >&2; then
  log "ERROR: dynamo.runtime $version does not import from $dest"
  exit 1
fi

log "dynamo.runtime $version ready in $dest (Python $py_tag)"
echo "export DYNAMO_RUNTIME_PATH=\"$dest\""
echo "export DYNAMO_RUNTIME_PYTHON=\"$python\""
