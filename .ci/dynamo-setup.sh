#!/usr/bin/env bash
# Fetches the real dynamo.nixl_connect for the Dynamo interop tests (DynamoInteropTest): downloads the
# ai-dynamo-runtime wheel (pinned) from PyPI, keeps only dynamo/nixl_connect/__init__.py (pure Python;
# the rest of the wheel is Dynamo's Rust runtime, which these tests do not use), and installs what that
# module imports beside it: pydantic (pinned, within the wheel's Requires-Dist range) and NIXL's `nixl`
# meta package (pure Python; it maps `nixl._api` onto the `nixl_cu12` package .ci/nixl-setup.sh unpacks).
# numpy and NIXL itself come from .ci/nixl-setup.sh. torch the module imports but uses only for isinstance
# checks: interop/dynamo_peer.py puts interop/torch_stand_in/ on the path when no torch is installed.
#
#   .ci/nixl-setup.sh > /dev/null; .ci/dynamo-setup.sh    # prints `export DYNAMO_PYTHON_PATH=...`
#
# Then the FULL runtime for the request-plane tests (issue 33) through .ci/dynamo-runtime-setup.sh, whose
# exports (DYNAMO_RUNTIME_PATH, DYNAMO_RUNTIME_PYTHON) are printed too. When it cannot be set up, only
# DYNAMO_PYTHON_PATH is printed (the request-plane tests skip, saying why) — except under CI=true, an error.
# DYNAMO_SETUP_RUNTIME=0 skips it.
#
# Variables: DYNAMO_RUNTIME_VERSION (default 1.6.1), PYDANTIC_VERSION (default 2.12.5),
# NIXL_META_VERSION (default 1.5.1, NIXL's version in .ci/nixl-setup.sh), PIP (default pip3).
# Nothing is installed into any Python environment; reruns reuse .ci-cache/dynamo/.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${DYNAMO_RUNTIME_VERSION:-1.6.1}"
pydantic_version="${PYDANTIC_VERSION:-2.12.5}"
nixl_meta_version="${NIXL_META_VERSION:-1.5.1}"
pip="${PIP:-pip3}"
cache="$root/.ci-cache"
dest="$cache/dynamo/ai_dynamo_runtime-$version"
module="$dest/dynamo/nixl_connect/__init__.py"
log() { echo "dynamo-setup: $*" >&2; }

# The full runtime first: when it is there, the module is copied from it (one download of the wheel).
runtime_env=""
runtime_module=""
if [[ "${DYNAMO_SETUP_RUNTIME:-1}" != 0 ]]; then
  if runtime_env="$(DYNAMO_RUNTIME_VERSION="$version" PYDANTIC_VERSION="$pydantic_version" \
        NIXL_META_VERSION="$nixl_meta_version" "$root/.ci/dynamo-runtime-setup.sh")"; then
    runtime_module="$(sed -n 's/^export DYNAMO_RUNTIME_PATH="\(.*\)"$/\1/p' <<<"$runtime_env")/dynamo/nixl_connect/__init__.py"
  elif [[ "${CI:-}" == "true" ]]; then
    log "ERROR: the Dynamo runtime could not be set up; CI must test the request plane against the real wheel"
    exit 1
  else
    runtime_env=""
    log "the Dynamo runtime could not be set up; the request-plane tests will be skipped"
  fi
fi

if [[ ! -f "$module" && -f "$runtime_module" ]]; then
  mkdir -p "$(dirname "$module")"
  cp "$runtime_module" "$module"
fi

if [[ ! -f "$module" ]]; then
  tmp="$cache/downloads/dynamo-$version"
  rm -rf "$tmp"; mkdir -p "$tmp"
  log "downloading ai-dynamo-runtime==$version from PyPI (~75 MB, only nixl_connect is kept)"
  # The module is pure Python: the cp310-abi3 manylinux wheel serves whatever python runs the tests.
  "$pip" download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
      --platform manylinux_2_28_x86_64 --dest "$tmp" "ai-dynamo-runtime==$version" >&2
  whl="$(ls "$tmp"/ai_dynamo_runtime-"$version"-*.whl | head -n 1)"
  rm -rf "$dest"; mkdir -p "$dest"
  python3 - "$whl" "$dest" <<'PY'
import sys, zipfile
whl, dest = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    z.extract("dynamo/nixl_connect/__init__.py", dest)
PY
  rm -rf "$tmp"   # the wheel is 75 MB; the cache keeps only the module
fi

if [[ ! -d "$dest/pydantic" ]]; then
  log "installing pydantic==$pydantic_version beside the module"
  "$pip" install --quiet --disable-pip-version-check --no-warn-conflicts --target "$dest" "pydantic==$pydantic_version" >&2
fi
if [[ ! -f "$dest/nixl/__init__.py" ]]; then
  log "installing NIXL's meta package nixl==$nixl_meta_version (no dependencies: nixl_cu12 is NIXL_PYTHON_PATH)"
  "$pip" install --quiet --disable-pip-version-check --no-deps --target "$dest" "nixl==$nixl_meta_version" >&2
fi

log "dynamo.nixl_connect $version ready in $dest"
echo "export DYNAMO_PYTHON_PATH=\"$dest\""
echo "export DYNAMO_RUNTIME_VERSION=\"$version\""
if [[ -n "$runtime_env" ]]; then echo "$runtime_env"; fi
