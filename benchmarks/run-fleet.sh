#!/usr/bin/env bash
# A fleet (issue 32; io.nixlconnect.benchmarks.FleetBenchmark): N producer JVMs x M connectors (every connector a
# worker with its own agent), consumer JVM(s) reading round-robin over all of them at concurrency C, producers
# restarting at random (a connector closed and replaced under a new agent name, now and then a whole JVM killed with
# SIGKILL), for SECONDS, on each transport. Prints per interval: reads, p50/p99, failures by cause (expected: the
# producer was being restarted; UNEXPECTED: anything else), restarts, and per process fds (sockets), threads, RSS,
# cached peers, open connections, evictions, reconnects, departed and idle-closed peers. At the end the reads stop,
# the producers exit and every consumer must be back to its idle fds, sockets and peers; exits 1 naming what failed
# (an unexpected failure, a crash, a process not back to idle).
#
#   benchmarks/run-fleet.sh [SECONDS [INTERVAL_SECONDS]]      # default 1800 s, report every 60 s
#
# Environment (defaults in brackets):
#   FLEET_TRANSPORTS "embedded nixl"   (nixl needs .ci/nixl-setup.sh, run here when NIXL_LIBRARY_DIR is unset)
#   FLEET_PRODUCERS [4] JVMs, FLEET_CONNECTORS [50] per JVM, FLEET_CONSUMERS [1] JVMs, FLEET_CONCURRENCY [8] per consumer
#   FLEET_RESTART_EVERY [2.0] mean seconds between producer restarts, FLEET_JVM_RESTART_ONE_IN [25] (1 in N a JVM)
#   FLEET_SIZE [65536] bytes per read; FLEET_PEER_IDLE_MS [30000] and FLEET_MAX_PEERS [library default]: the peer
#   lifecycle (embedded peerIdleTimeout / maxCachedPeers, NIXL peerIdleLimit / maxLoadedPeers)
#   FLEET_SAME_HOST_COPY [false]: embedded reads over TCP, as between hosts; FLEET_LIST_SOCKETS [false]: every
#   process's sockets (ports, TCP state) every interval
#   BASELINE=<git revision>: run on that revision's nixl-connect-core instead (built in a temporary worktree), with
#   the same harness: what the end-of-run check says about a library without the peer lifecycle
# scripts/test.sh runs a short pass per transport (CI settings: FLEET_* small, idle limits of 2 s).
# Results: docs/reliability.md ("Fleet runs").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-1800}"
interval="${2:-60}"
transports="${FLEET_TRANSPORTS:-embedded nixl}"
cd "$root"
if [[ " $transports " == *" nixl "* && -z "${NIXL_LIBRARY_DIR:-}" ]]; then
  eval "$(.ci/nixl-setup.sh)"
fi
./mvnw -q -B -o -pl nixl-connect-benchmarks -am package -DskipTests >&2 \
  || ./mvnw -q -B -pl nixl-connect-benchmarks -am package -DskipTests >&2
# A copy of the classes and jars: a rebuild during a long run must not change what its restarted producers run.
snapshot="$(mktemp -d /tmp/nixl-fleet-classpath.XXXXXX)"
cleanup=(rm -rf "$snapshot")
trap '"${cleanup[@]}"' EXIT
cp -r nixl-connect-benchmarks/target/classes nixl-connect-benchmarks/target/lib "$snapshot"/
built="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' with uncommitted changes')"
core_jar="$(ls "$snapshot"/lib/nixl-connect-core-*.jar | head -1)"
if [[ -n "${BASELINE:-}" ]]; then
  tree="$(mktemp -d /tmp/nixl-fleet-baseline.XXXXXX)/tree"
  git worktree add -q --detach "$tree" "$BASELINE"
  cleanup=(bash -c "git worktree remove --force '$tree'; rm -rf '$snapshot'")
  (cd "$tree" && ./mvnw -q -B -o -pl nixl-connect-core package -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true >&2)
  baseline_jar="$(ls "$tree"/nixl-connect-core/target/nixl-connect-core-*.jar | grep -v -e sources -e javadoc | head -1)"
  cp "$baseline_jar" "$core_jar"
  echo "== baseline: nixl-connect-core of $BASELINE ($(git rev-parse --short "$BASELINE")) under the harness of $built"
fi
classpath="$snapshot/classes:$(ls "$snapshot"/lib/*.jar | paste -sd:)"
status=0
for transport in $transports; do
  if [[ "$transport" == nixl && -z "${NIXL_LIBRARY_DIR:-}" ]]; then
    echo "run-fleet.sh: NIXL is not set up (.ci/nixl-setup.sh): no nixl pass" >&2
    status=1
    continue
  fi
  echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $transport on $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, load average: $(cut -d' ' -f1-3 /proc/loadavg); built from $built"
  java -Xmx512m -Dnixl.library.path="${NIXL_LIBRARY_DIR:-}" \
      -Dfleet.producers="${FLEET_PRODUCERS:-4}" -Dfleet.connectors="${FLEET_CONNECTORS:-50}" \
      -Dfleet.consumers="${FLEET_CONSUMERS:-1}" -Dfleet.concurrency="${FLEET_CONCURRENCY:-8}" \
      -Dfleet.restartEvery="${FLEET_RESTART_EVERY:-2.0}" -Dfleet.jvmRestartOneIn="${FLEET_JVM_RESTART_ONE_IN:-25}" \
      -Dfleet.size="${FLEET_SIZE:-65536}" -Dfleet.peerIdleMillis="${FLEET_PEER_IDLE_MS:-30000}" \
      ${FLEET_MAX_PEERS:+-Dfleet.maxPeers="$FLEET_MAX_PEERS"} \
      -Dbench.sameHostCopy="${FLEET_SAME_HOST_COPY:-false}" -Dfleet.listSockets="${FLEET_LIST_SOCKETS:-false}" \
      -cp "$classpath" io.nixlconnect.benchmarks.FleetBenchmark "$transport" "$seconds" "$interval" || status=1
  echo "== $(date -u '+%Y-%m-%d %H:%M UTC') load average: $(cut -d' ' -f1-3 /proc/loadavg)"
done
exit "$status"
