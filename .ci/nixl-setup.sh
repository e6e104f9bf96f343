#!/usr/bin/env bash
# Fetches a real NIXL for the NIXL transport tests: downloads NIXL's Python wheel from PyPI (the
# wheel carries libnixl_capi.so, libnixl.so, the plugins, UCX and Abseil with $ORIGIN rpaths), unpacks
# the native libraries and NIXL's Python package into .ci-cache/nixl/, adds numpy there (the package
# needs it; torch it only uses when present) and prints the environment the tests read.
#
#   eval "$(.ci/nixl-setup.sh)"      # or: .ci/nixl-setup.sh; source .ci-cache/nixl/env.sh
#
# Variables: NIXL_WHEEL (default nixl-cu12), NIXL_WHEEL_VERSION (default 1.5.1), PIP (default pip3),
# NIXL_SETUP_PYTHON=0 to skip the Python package (the interop test then skips).
# Nothing is installed into any Python environment: PYTHONPATH=$NIXL_PYTHON_PATH uses the package.
# Reruns reuse the cache.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
wheel_name="${NIXL_WHEEL:-nixl-cu12}"
version="${NIXL_WHEEL_VERSION:-1.5.1}"
pip="${PIP:-pip3}"
module="${wheel_name//-/_}"                       # nixl-cu12 -> nixl_cu12
cache="$root/.ci-cache"
dest="$cache/nixl/$module-$version"
libdir="$dest/.$module.mesonpy.libs"
log() { echo "nixl-setup: $*" >&2; }

if [[ ! -f "$libdir/libnixl_capi.so" ]]; then
  mkdir -p "$cache/downloads"
  log "downloading $wheel_name==$version from PyPI"
  # The native libraries do not depend on the Python version: ask for the cp311 manylinux wheel
  # whatever python runs pip.
  "$pip" download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
      --platform manylinux_2_28_x86_64 --dest "$cache/downloads" "$wheel_name==$version" >&2
  whl="$(ls "$cache/downloads/${module}-${version}-"*.whl | head -n 1)"
  log "unpacking the native libraries of $(basename "$whl")"
  rm -rf "$dest"
  mkdir -p "$dest"
  python3 - "$whl" "$dest" "$module" <<'PY'
import sys, zipfile
whl, dest, module = sys.argv[1:]
# NIXL + plugins, bundled UCX/Abseil/..., and the Python package (its extension finds the libraries
# through $ORIGIN/../.<module>.mesonpy.libs, so it must sit beside them).
wanted = (f".{module}.mesonpy.libs/", f"{module}.libs/", f"{module}/")
with zipfile.ZipFile(whl) as z:
    for info in z.infolist():
        if info.filename.startswith(wanted):
            z.extract(info, dest)
PY
  chmod -R u+rwX "$dest"
fi

if [[ ! -f "$libdir/libnixl_capi.so" ]]; then
  log "ERROR: $wheel_name $version has no libnixl_capi.so (NIXL's C API); use NIXL >= 1.1"
  exit 1
fi
unresolved="$(ldd "$libdir/libnixl_capi.so" "$libdir/plugins/libplugin_UCX.so" | grep 'not found' || true)"
if [[ -n "$unresolved" ]]; then
  log "ERROR: unresolved dependencies:"; echo "$unresolved" >&2; exit 1
fi

python_env=""
if [[ "${NIXL_SETUP_PYTHON:-1}" != 0 ]]; then
  if [[ ! -f "$dest/$module/_api.py" ]]; then
    log "ERROR: $dest lacks NIXL's Python package; remove $dest and rerun"; exit 1
  fi
  if [[ ! -d "$dest/numpy" ]]; then
    log "installing numpy beside NIXL's Python package"
    "$pip" install --quiet --disable-pip-version-check --target "$dest" numpy >&2
  fi
  python_env="export NIXL_PYTHON_PATH=\"$dest\""
fi

# A host's rdma-core user-space libraries (libibverbs, libefa, libnl) for NixlHostRdmaCoreExitTest: the wheel's UCX
# links the host's libefa.so.1 beside its own bundled libibverbs/libnl, which crashed every NIXL process at exit
# before NixlNativeLibrary preloaded the host's copies. Debian's packages, unpacked (dpkg -x), never installed:
# the test puts them on its child JVM's LD_LIBRARY_PATH only. Skipped where apt-get is not there.
rdma_root="$cache/rdma-core/root"
rdma_env=""
if [[ ! -f "$rdma_root/usr/lib/x86_64-linux-gnu/libefa.so.1" ]] && command -v apt-get >/dev/null 2>&1; then
  rdma_packages=(libibverbs1 ibverbs-providers libnl-3-200 libnl-route-3-200)
  mkdir -p "$cache/rdma-core/debs"
  fetch_rdma() { (cd "$cache/rdma-core/debs" && apt-get download -qq "${rdma_packages[@]}" >/dev/null 2>&1); }
  if ! fetch_rdma && [[ "$(id -u)" == 0 ]]; then
    apt-get update -qq >/dev/null 2>&1 || true
    fetch_rdma || true
  fi
  for deb in "$cache/rdma-core/debs"/*.deb; do
    if [[ -f "$deb" ]]; then dpkg -x "$deb" "$rdma_root"; fi
  done
fi
if [[ -f "$rdma_root/usr/lib/x86_64-linux-gnu/libefa.so.1" ]]; then
  rdma_env="export NIXL_TEST_HOST_RDMA_CORE=\"$rdma_root/usr/lib/x86_64-linux-gnu:$rdma_root/lib/x86_64-linux-gnu\""
else
  log "no rdma-core libraries for NixlHostRdmaCoreExitTest (apt-get download failed); it will be skipped"
fi

env_file="$cache/nixl/env.sh"
# UCX_NET_DEVICES=lo: every NIXL test talks to peers on this host. With UCX's default (all devices) an agent
# also uses whatever interface is up when it starts — such as the veth pair of a two-host test in a build
# running beside this one — and fails ("Destination is unreachable") once it is gone
# (NixlInterfaceChurnTest). The two-host test sets its own devices. Keep a value already set.
# No UCX_MODULES: the crash at exit that UCX_MODULES=^ib used to hide is fixed in the library
# (NixlNativeLibrary.preloadHostRdmaCore; NixlHostRdmaCoreExitTest).
cat > "$env_file" <<ENV
export NIXL_LIBRARY_DIR="$libdir"
export NIXL_PLUGIN_DIR="$libdir/plugins"
export UCX_NET_DEVICES="${UCX_NET_DEVICES:-lo}"
$python_env
$rdma_env
ENV
log "NIXL $version ready in $libdir (env in $env_file)"
cat "$env_file"
