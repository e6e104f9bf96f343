#!/usr/bin/env bash
# NIXL in a fleet (issue 32), on this tree and, with BASELINE=<rev>, on that revision's nixl-connect-core (built in a
# temporary worktree with this tree's benchmark classes), alternating, BENCH_ROUNDS times (default 2):
#   1. PeerFleetBenchmark nixl, 4 producer JVMs x 25 agents (100 peers), 64 KiB complete operations at concurrency 8:
#      ops/s, read p50/p99, sockets of the consumer and of each producer JVM over the measured 4,000 reads;
#      and the same on the embedded transport (this tree only), for the NIXL / embedded ratio;
#   2. the same at concurrency 1 over 10 peers (5 JVMs x 2) and over 100 peers (5 JVMs x 20): steady read p50 100 / 10
#      with the number of producer JVMs held (so that only the peers' number differs), and the sockets opened over
#      2,000 reads round-robin over 100 peers;
#   3. FirstOperationBenchmark nixl (a new producer's first read against the steady p50), and on this tree again with
#      -Dbench.first.introduce=true (the producer introduced to the reader 20 ms before its first request).
#
#   benchmarks/run-nixl-fleet.sh                    # this tree
#   BASELINE=125fd11 benchmarks/run-nixl-fleet.sh   # and before/after against 125fd11
#   PROGRESS_THREAD_OFF=1 benchmarks/run-nixl-fleet.sh  # also the variant that sets NIXL's progress thread off explicitly (the default)
#
# Sets NIXL up with .ci/nixl-setup.sh unless NIXL_LIBRARY_DIR is already set. Prints the machine's load average with
# each run: on a shared machine the ratios within one round are what to compare.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [[ -z "${NIXL_LIBRARY_DIR:-}" ]]; then
  eval "$(.ci/nixl-setup.sh)"
fi
export NIXL_LIBRARY_DIR
build() {
  (cd "$1" && { ./mvnw -q -B -o -pl nixl-connect-benchmarks -am package -DskipTests >&2 \
    || ./mvnw -q -B -pl nixl-connect-benchmarks -am package -DskipTests >&2; })
}
build "$root"
# Variants: label, tree, extra JVM options (every NIXL case runs once per variant).
labels=("after"); trees=("$root"); extras=("")
# The thread is off by default now (NixlSettings refuses it on), so this variant repeats "after" unless asked for.
if [[ "${PROGRESS_THREAD_OFF:-0}" == 1 ]]; then
  labels+=("after, NIXL progress thread off"); trees+=("$root"); extras+=("-Dbench.nixl.progressThreadDelayMicros=-1")
fi
if [[ -n "${BASELINE:-}" ]]; then
  baseline="$(mktemp -d)/baseline"
  git worktree add -q --detach "$baseline" "$BASELINE"
  trap 'git worktree remove --force "$baseline"' EXIT
  cp nixl-connect-benchmarks/src/main/java/io/nixlconnect/benchmarks/{PeerFleetBenchmark,ChildJvms}.java \
     "$baseline/nixl-connect-benchmarks/src/main/java/io/nixlconnect/benchmarks/"
  build "$baseline"
  labels+=("before"); trees+=("$baseline"); extras+=("")
fi
run() { # label tree java-arguments...
  local label="$1" tree="$2"; shift 2
  echo "== $label $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg): $*"
  (cd "$tree" && java -Xmx1g -cp "nixl-connect-benchmarks/target/classes:nixl-connect-benchmarks/target/lib/*" \
    -Dnixl.library.path="$NIXL_LIBRARY_DIR" "$@" 2> >(grep -v " INFO " >&2) | grep -v " INFO ")
}
fleet=io.nixlconnect.benchmarks.PeerFleetBenchmark
first=io.nixlconnect.benchmarks.FirstOperationBenchmark
each() { # java-arguments... : runs them once per variant
  local i
  for i in "${!labels[@]}"; do
    # shellcheck disable=SC2086 # an empty extra adds no argument
    run "${labels[$i]}" "${trees[$i]}" ${extras[$i]} "$@"
  done
}
for round in $(seq "${BENCH_ROUNDS:-2}"); do
  echo "== round $round: $(nproc) cores"
  each "$fleet" nixl 4 25 65536 8 4000 1000
  run "after (embedded)" "$root" "$fleet" embedded 4 25 65536 8 4000 1000
  each "$fleet" nixl 5 2 65536 1 2000 500
  each "$fleet" nixl 5 20 65536 1 2000 500
  each -Dbench.first.warmup=1000 "$first" nixl 10
  run "after (introduced)" "$root" -Dbench.first.warmup=1000 -Dbench.first.introduce=true "$first" nixl 10
  run "after (embedded)" "$root" -Dbench.first.warmup=1000 "$first" embedded 200
  run "after (embedded, introduced)" "$root" -Dbench.first.warmup=1000 -Dbench.first.introduce=true "$first" embedded 200
done
