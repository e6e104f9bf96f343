#!/usr/bin/env bash
# KV-cache shape: N blocks x B bytes scattered over a registered pool on both sides, READ and WRITE, beside one
# contiguous operation of the same bytes (io.nixlconnect.benchmarks.KvBenchmark, both connectors in one JVM,
# scattered and contiguous iterations alternating), over the NIXL backend, the embedded transport's same-host copy
# and its TCP path; then NIXL driven directly through its Python API (benchmarks/nixl_kv_direct.py: per operation
# descriptor lists, and prepared descriptor lists with index lists), same shapes, same loop.
#
#   benchmarks/run-kv.sh [NxB,...]     # default 128x65536,1024x16384,4096x4096
#
# BENCH_KV_ITERATIONS (default 200) and BENCH_KV_WARMUP (default 300) per shape, operation and mode.
# Sets NIXL up with .ci/nixl-setup.sh unless NIXL_LIBRARY_DIR and NIXL_PYTHON_PATH are already set.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shapes="${1:-128x65536,1024x16384,4096x4096}"
iterations="${BENCH_KV_ITERATIONS:-200}"
warmup="${BENCH_KV_WARMUP:-300}"
cd "$root"
if [[ -z "${NIXL_LIBRARY_DIR:-}" || -z "${NIXL_PYTHON_PATH:-}" ]]; then
  eval "$(.ci/nixl-setup.sh)"
fi
./mvnw -q -B -o -pl nixl-connect-benchmarks -am package -DskipTests >&2 \
  || ./mvnw -q -B -pl nixl-connect-benchmarks -am package -DskipTests >&2
classpath="nixl-connect-benchmarks/target/classes:$(ls nixl-connect-benchmarks/target/lib/*.jar | tr '\n' ':')"
kv() { # kv BACKEND [JVM options...]
  local backend="$1"
  shift
  java --enable-native-access=ALL-UNNAMED -Xmx1g -Dbench.kv.iterations="$iterations" -Dbench.kv.warmup="$warmup" -Dnixl.library.path="$NIXL_LIBRARY_DIR" \
    "$@" -cp "$classpath" io.nixlconnect.benchmarks.KvBenchmark "$backend" "$shapes" 2> >(grep -v " INFO " >&2)
}
echo "== $(date -u +%FT%TZ) $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== Java, NIXL backend"
kv nixl
echo "== Java, embedded, same-host copy"
kv embedded
echo "== Java, embedded, TCP"
kv embedded -Dbench.sameHostCopy=false
echo "== NIXL direct (Python API), one process, two agents"
BENCH_KV_ITERATIONS="$iterations" BENCH_KV_WARMUP="$warmup" PYTHONPATH="$NIXL_PYTHON_PATH" \
  python3 benchmarks/nixl_kv_direct.py "$shapes" 2> >(grep -v "NIXL INFO" >&2)
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
