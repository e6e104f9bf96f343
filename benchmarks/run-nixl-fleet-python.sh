#!/usr/bin/env bash
# Issue 32's "ahead of NIXL's own Python API doing the same per-operation work": 64 KiB complete operations at
# concurrency 8, read round-robin from the same producer JVMs (PeerFleetBenchmark's `producers nixl`), by
#   Java:   PeerFleetBenchmark nixl JVMS PER_JVM 65536 8 4000 1000 (this tree's library and NixlSettings defaults)
#   Python: benchmarks/nixl_fleet_direct.py with NIXL's Python API, --progress-thread on (nixl_agent's defaults) and
#           --progress-thread off (nixl_agent_config(enable_prog_thread=False))
# over 100 peers (4 JVMs x 25) and 10 peers (2 x 5); BENCH_ROUNDS rounds (default 2), interleaved, the order of the
# three reversed every other round. Ends with the median ops/s and p50 of each over the rounds.
#
#   benchmarks/run-nixl-fleet-python.sh
#   BENCH_ROUNDS=3 BENCH_MAX_LOAD=4 benchmarks/run-nixl-fleet-python.sh   # each run waits (up to BENCH_LOAD_WAIT s,
#                                                                         # default 600) for a 1-minute load below 4
#   BENCH_FLEETS="1 2" BENCH_OPS=100 BENCH_WARMUP=20 benchmarks/run-nixl-fleet-python.sh   # a quick check
#
# BENCH_JAVA_OPTS adds JVM options to the Java consumer (its producers get BenchmarkOptions.FORWARDED only, as the
# Python consumer's do). Sets NIXL up with .ci/nixl-setup.sh unless NIXL_LIBRARY_DIR and NIXL_PYTHON_PATH are set.
# Prints the load average before each run; on a shared machine compare within a round.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [[ -z "${NIXL_LIBRARY_DIR:-}" || -z "${NIXL_PYTHON_PATH:-}" ]]; then
  eval "$(.ci/nixl-setup.sh)"
fi
export NIXL_LIBRARY_DIR
./mvnw -q -B -o -pl nixl-connect-benchmarks -am package -DskipTests >&2 \
  || ./mvnw -q -B -pl nixl-connect-benchmarks -am package -DskipTests >&2
classpath="nixl-connect-benchmarks/target/classes:nixl-connect-benchmarks/target/lib/*"
ops="${BENCH_OPS:-4000}"
warmup="${BENCH_WARMUP:-1000}"
concurrency="${BENCH_CONCURRENCY:-8}"
size="${BENCH_SIZE:-65536}"
read -r -a fleets <<< "${BENCH_FLEETS:-4 25 2 5}"   # pairs: JVMs, agents per JVM

await_load() {
  [[ -z "${BENCH_MAX_LOAD:-}" ]] && return 0
  local deadline=$((SECONDS + ${BENCH_LOAD_WAIT:-600}))
  while awk -v max="$BENCH_MAX_LOAD" '{ exit !($1 >= max) }' /proc/loadavg && ((SECONDS < deadline)); do
    sleep 5
  done
}
# Both filter the libraries' INFO lines (NIXL's Python logging writes them to stdout).
java_run() {
  java -Xmx1g ${BENCH_JAVA_OPTS:-} -cp "$classpath" -Dnixl.library.path="$NIXL_LIBRARY_DIR" \
    io.nixlconnect.benchmarks.PeerFleetBenchmark nixl "$@" 2> >(grep -v " INFO " >&2) | grep -v " INFO " || true
}
python_run() {
  PYTHONPATH="$NIXL_PYTHON_PATH" python3 benchmarks/nixl_fleet_direct.py "$@" 2> >(grep -v " INFO " >&2) \
    | grep -v " INFO " || echo "  (exit status: failures or unseen completions, see above)"
}
run() { # label, then the command
  local label="$1"; shift
  await_load
  echo "== $label $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg): ${*:2}"
  "$@"
}
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for round in $(seq "${BENCH_ROUNDS:-2}"); do
  echo "== round $round: $(nproc) cores"
  for ((f = 0; f < ${#fleets[@]}; f += 2)); do
    shape=("${fleets[f]}" "${fleets[f + 1]}" "$size" "$concurrency" "$ops" "$warmup")
    order=(java on off)
    if ((round % 2 == 0)); then order=(off on java); fi
    for who in "${order[@]}"; do
      if [[ $who == java ]]; then
        run java java_run "${shape[@]}"
      else
        run "python, progress thread $who" python_run --progress-thread "$who" "${shape[@]}"
      fi
    done
  done
done | tee "$log"
echo "== medians over ${BENCH_ROUNDS:-2} rounds"
python3 - "$log" <<'PY'
import re, statistics, sys
runs = {}
pattern = re.compile(r"^(\S+)\s+(\d+) peers .*: (\d+) ops/s over \d+ ops .* read p50 ([\d.]+) ms p99 ([\d.]+) ms, (\d+) failed")
for line in open(sys.argv[1]):
    m = pattern.match(line)
    if m:
        runs.setdefault((m[1], int(m[2])), []).append((int(m[3]), float(m[4]), float(m[5]), int(m[6])))
for (label, peers), values in sorted(runs.items(), key=lambda item: (-item[0][1], item[0][0])):
    print("%-16s %3d peers: %6.0f ops/s, p50 %.3f ms, p99 %.3f ms (median of %d; ops/s %s; %d failed)" % (
        label, peers, statistics.median(v[0] for v in values), statistics.median(v[1] for v in values),
        statistics.median(v[2] for v in values), len(values), " ".join(str(v[0]) for v in values),
        sum(v[3] for v in values)))
PY
