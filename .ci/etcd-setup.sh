#!/usr/bin/env bash
# Fetches an etcd server for the Dynamo discovery tests (issue 33: etcd discovery, leases, watches): Debian's
# etcd-server package (and etcd-client, for etcdctl), downloaded with `apt-get download` and unpacked with
# `dpkg-deb -x` into .ci-cache/etcd/ — never installed, no root needed (root only to refresh apt's lists
# when the download fails). Tests start their own etcd on loopback, on a free port, with a data directory
# of their own:
#
#   eval "$(.ci/etcd-setup.sh)"      # prints export ETCD_BINARY=... ETCD_CLI_BINARY=... ETCD_SERVER_VERSION=...
#   "$ETCD_BINARY" --data-dir "$dir" --listen-client-urls http://127.0.0.1:$port \
#       --advertise-client-urls http://127.0.0.1:$port --listen-peer-urls http://127.0.0.1:$peer_port
#   ETCD_ENDPOINTS=http://127.0.0.1:$port DYN_DISCOVERY_BACKEND=etcd ...   # a Dynamo worker or client
#
# etcd takes every ETCD_<FLAG> environment variable as a flag (ETCD_VERSION=3.4.23 would stop it: "invalid value
# for ETCD_VERSION") and warns about unknown ones (ETCD_BINARY), etcdctl likewise with ETCDCTL_*: hence the names
# ETCD_CLI_BINARY and ETCD_SERVER_VERSION (not flags of either), and start etcd with ETCD_BINARY removed from its
# environment for a log without that warning.
# Debian 12 ships etcd 3.4.23 (a static Go binary; its v3 API and v3 JSON gateway are what Dynamo 1.6.1 and
# jetcd speak). ETCD_SETUP_DEBS=<dir> takes the .deb files from that directory instead of apt.
# Exits 1 (saying why) when no etcd could be had; callers decide whether that skips tests or fails CI.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.ci-cache/etcd"
debs="${ETCD_SETUP_DEBS:-$cache/debs}"
unpacked="$cache/root"
etcd="$unpacked/usr/bin/etcd"
etcdctl="$unpacked/usr/bin/etcdctl"
log() { echo "etcd-setup: $*" >&2; }

if [[ ! -x "$etcd" ]]; then
  mkdir -p "$debs"
  if ! ls "$debs"/etcd-server_*.deb >/dev/null 2>&1; then
    if ! command -v apt-get >/dev/null 2>&1; then
      log "ERROR: no apt-get to download Debian's etcd-server (set ETCD_SETUP_DEBS to a directory with the .deb)"
      exit 1
    fi
    fetch() { (cd "$debs" && apt-get download -qq etcd-server etcd-client >/dev/null 2>&1); }
    if ! fetch && [[ "$(id -u)" == 0 ]]; then
      log "refreshing apt's package lists"
      apt-get update -qq >/dev/null 2>&1 || true
      fetch || true
    fi
  fi
  server_deb="$(ls "$debs"/etcd-server_*.deb 2>/dev/null | head -n 1 || true)"
  if [[ -z "$server_deb" ]]; then
    log "ERROR: apt-get download etcd-server failed (no Debian package source?)"
    exit 1
  fi
  rm -rf "$unpacked"; mkdir -p "$unpacked"
  for deb in "$debs"/etcd-server_*.deb "$debs"/etcd-client_*.deb; do
    if [[ -f "$deb" ]]; then dpkg-deb -x "$deb" "$unpacked"; fi
  done
fi

if ! version_text="$("$etcd" --version 2>&1)"; then
  log "ERROR: $etcd does not run: $version_text"
  exit 1
fi
version="$(sed -n 's/^etcd Version: *//p' <<<"$version_text")"
log "etcd $version ready: $etcd"
echo "export ETCD_BINARY=\"$etcd\""
if [[ -x "$etcdctl" ]]; then echo "export ETCD_CLI_BINARY=\"$etcdctl\""; fi
echo "export ETCD_SERVER_VERSION=\"$version\""
