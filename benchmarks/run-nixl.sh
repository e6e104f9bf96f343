#!/usr/bin/env bash
# Runs the Java NIXL benchmark (TransferBenchmark NIXL, two JVMs) and the same loop on NIXL's Python API
# (benchmarks/nixl_direct.py, two processes), one after the other, with the same sizes.
#
#   benchmarks/run-nixl.sh [maxSizeBytes]      # default 1 GiB
#
# Sets NIXL up with .ci/nixl-setup.sh unless NIXL_LIBRARY_DIR and NIXL_PYTHON_PATH are already set.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
max_size="${1:-$((1 << 30))}"
cd "$root"
if [[ -z "${NIXL_LIBRARY_DIR:-}" || -z "${NIXL_PYTHON_PATH:-}" ]]; then
  eval "$(.ci/nixl-setup.sh)"
fi
./mvnw -q -B -o -pl nixl-connect-benchmarks -am package -DskipTests >&2 \
  || ./mvnw -q -B -pl nixl-connect-benchmarks -am package -DskipTests >&2
classpath="nixl-connect-benchmarks/target/classes:$(ls nixl-connect-benchmarks/target/lib/*.jar | tr '\n' ':')"

echo "== $(date -u +%FT%TZ) $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== Java (nixl-connect, NIXL backend), two JVMs"
java -Xmx1g -Dnixl.library.path="$NIXL_LIBRARY_DIR" -cp "$classpath" \
  io.nixlconnect.benchmarks.TransferBenchmark NIXL "$max_size" 2> >(grep -v " INFO " >&2)
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== NIXL direct (Python API), two processes"
PYTHONPATH="$NIXL_PYTHON_PATH" python3 benchmarks/nixl_direct.py "$max_size" 2> >(grep -v "NIXL INFO" >&2)
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
