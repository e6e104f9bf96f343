#!/usr/bin/env bash
# Runs the Java NIXL benchmark (TransferBenchmark NIXL, two JVMs) and the same loop on NIXL's Python API
# (benchmarks/nixl_direct.py, two processes), one after the other, with the same sizes; BENCH_ROUNDS times
# (default 3), alternating, then compares the two per size on the median over rounds
# (benchmarks/compare_nixl.py): single runs on a shared machine drift by more than the gap being measured.
#
#   benchmarks/run-nixl.sh [maxSizeBytes]      # default 1 GiB
#
# BENCH_HUGEPAGES=1 (default) / 0: both sides' buffers with / without huge-page advice (numpy gives
# large arrays MADV_HUGEPAGE by default, malloc does not; with THP in "madvise" mode that alone changes
# cross-memory-attach bandwidth ~1.5x, so the two runs must match).
#
# Sets NIXL up with .ci/nixl-setup.sh unless NIXL_LIBRARY_DIR and NIXL_PYTHON_PATH are already set.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
max_size="${1:-$((1 << 30))}"
hugepages="${BENCH_HUGEPAGES:-1}"
cd "$root"
if [[ -z "${NIXL_LIBRARY_DIR:-}" || -z "${NIXL_PYTHON_PATH:-}" ]]; then
  eval "$(.ci/nixl-setup.sh)"
fi
./mvnw -q -B -o -pl nixl-connect-benchmarks -am package -DskipTests >&2 \
  || ./mvnw -q -B -pl nixl-connect-benchmarks -am package -DskipTests >&2
classpath="nixl-connect-benchmarks/target/classes:$(ls nixl-connect-benchmarks/target/lib/*.jar | tr '\n' ':')"

rounds="${BENCH_ROUNDS:-3}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for round in $(seq "$rounds"); do
  echo "== round $round of $rounds: $(date -u +%FT%TZ) $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg);" \
    "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null); huge-page advice: $hugepages"
  echo "== Java (nixl-connect, NIXL backend), two JVMs"
  java --enable-native-access=ALL-UNNAMED -Xmx1g -Dbench.hugepages="$([[ $hugepages == 1 ]] && echo true || echo false)" -Dnixl.library.path="$NIXL_LIBRARY_DIR" -cp "$classpath" \
    io.nixlconnect.benchmarks.TransferBenchmark NIXL "$max_size" 2> >(grep -v " INFO " >&2)
  echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "== NIXL direct (Python API), two processes"
  NUMPY_MADVISE_HUGEPAGE="$hugepages" PYTHONPATH="$NIXL_PYTHON_PATH" python3 benchmarks/nixl_direct.py "$max_size" 2> >(grep -v "NIXL INFO" >&2)
  echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
done | tee "$log"
python3 benchmarks/compare_nixl.py < "$log"
