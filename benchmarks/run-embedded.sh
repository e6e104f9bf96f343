#!/usr/bin/env bash
# Embedded-transport benchmark beside UCX's own: in one run, on one machine, loopback only.
#   1. ucx_perftest -t ucp_get with UCX_TLS=tcp, 1 GiB (Debian package ucx-utils; installed if missing)
#   2. TransferBenchmark EMBEDDED: READ bandwidth 4 KiB … 1 GiB between two JVMs, and the p50/p99 latency
#      of one complete 4 KiB operation.
# Usage: benchmarks/run-embedded.sh [maxSizeBytes]      Results: paste into docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
max_size="${1:-1073741824}"
port=13337

echo "== $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB"
echo "== java: $(java -version 2>&1 | head -1)"

if ! command -v ucx_perftest >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ucx-utils >/dev/null
fi
echo "== ucx_perftest $(ucx_info -v | head -1 | sed 's/# //'), UCX_TLS=tcp, ucp_get 1 GiB x 10 (MB/s columns)"
UCX_TLS=tcp ucx_perftest -p "$port" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
sleep 1
UCX_TLS=tcp ucx_perftest 127.0.0.1 -p "$port" -t ucp_get -s 1073741824 -n 10 -w 2 2>&1 | grep -E 'Final|overall' | tail -2
wait "$server" 2>/dev/null || true

echo "== ucx_perftest UCX_TLS=tcp, ucp_get 4 KiB latency (usec columns)"
UCX_TLS=tcp ucx_perftest -p "$port" >/dev/null 2>&1 &
server=$!
sleep 1
UCX_TLS=tcp ucx_perftest 127.0.0.1 -p "$port" -t ucp_get -s 4096 -n 10000 -w 1000 2>&1 | grep -E 'Final' | tail -1
wait "$server" 2>/dev/null || true

echo "== nixl-connect embedded transport, two JVMs"
./mvnw -q -B -ntp -pl nixl-connect-benchmarks -am package -DskipTests
java -cp "nixl-connect-benchmarks/target/classes:nixl-connect-benchmarks/target/lib/*" \
    -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    io.nixlconnect.benchmarks.TransferBenchmark EMBEDDED "$max_size"
